"""``delivery check-design-contract [PATH] [--format json]``: validate a design contract file.

Exit 0 when the contract is valid, 2 otherwise (unreadable, not UTF-8, too large, invalid YAML,
schema or semantic finding). The report goes to stdout; no input ever produces a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal, TextIO

from sink.bounded_yaml import BoundedYamlError, load_bounded_yaml_file
from sink.contracts.errors import ExitClass
from sink.design.findings import Finding, report
from sink.design.query import BUNDLED_CONTRACT
from sink.design.validator import ALL_RULE_IDS, contract_id_of, validate_document, yaml_finding


def design_contract_report(path: Path | None) -> dict[str, Any]:
    """Load ``path`` (the bundled contract when ``None``) and return the stable report."""
    target = BUNDLED_CONTRACT if path is None else Path(path)
    try:
        document = load_bounded_yaml_file(target)
    except BoundedYamlError as error:
        return report(None, [yaml_finding(error)])
    return report(contract_id_of(document), validate_document(document))


def _internal_failure(error: Exception) -> dict[str, Any]:
    # A defect in the validator must still produce a report and exit 2, never a traceback; only
    # the exception type is reported, because its text could quote document content.
    finding = Finding(rule="internal", location="", code="design.internal_error",
                      message=f"validator failed with {type(error).__name__}")
    return report(None, [finding])


def render_text(result: dict[str, Any]) -> str:
    name = result["contract"] or "<unknown contract>"
    if result["valid"]:
        return f"design contract {name}: valid ({len(ALL_RULE_IDS)} rules checked)\n"
    lines = [f"design contract {name}: INVALID, {len(result['findings'])} finding(s)"]
    for finding in result["findings"]:
        where = f" at {finding['location']}" if finding["location"] else ""
        lines.append(f"  [{finding['rule']}] {finding['code']}{where}: {finding['message']}")
    return "\n".join(lines) + "\n"


def render_json(result: dict[str, Any]) -> str:
    return json.dumps(result, sort_keys=True, indent=2) + "\n"


def check_design_contract(
    path: Path | None,
    output_format: Literal["text", "json"],
    *,
    stream: TextIO | None = None,
) -> int:
    """Validate the contract at ``path`` (bundled when ``None``), print the report, return the exit code."""
    out = sys.stdout if stream is None else stream
    try:
        result = design_contract_report(path)
    except Exception as error:  # the CLI contract is "report, never traceback"
        result = _internal_failure(error)
    out.write(render_json(result) if output_format == "json" else render_text(result))
    return int(ExitClass.OK) if result["valid"] else int(ExitClass.INVALID_INPUT)


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m sink.design.command [PATH] [--format json]``) for CI smoke checks
    before or without the ``delivery`` CLI; argparse reports bad arguments with exit 2."""
    parser = argparse.ArgumentParser(prog="check-design-contract", description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=None, help="contract file (default: bundled)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    arguments = parser.parse_args(argv)
    return check_design_contract(arguments.path, arguments.output_format)


if __name__ == "__main__":
    raise SystemExit(main())
