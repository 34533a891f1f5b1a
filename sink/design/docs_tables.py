"""Markdown tables of the contract (rules, tuples, transitions) for docs/design-contract.md.

``python -m sink.design.docs_tables`` prints the generated block; a test keeps the block in the
document identical to this output, so the reference page cannot drift from the contract.
"""

from __future__ import annotations

import sys
from typing import Any

from sink.bounded_yaml import load_bounded_yaml_file
from sink.design.query import BUNDLED_CONTRACT
from sink.design.validator import RULES

BEGIN = "<!-- BEGIN GENERATED: python -m sink.design.docs_tables -->"
END = "<!-- END GENERATED -->"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(row) for row in rows)]


def render_tables(document: dict[str, Any]) -> str:
    terminal = set(document["terminal_tuples"])
    lines = [BEGIN, "", "### Validator rules", ""]
    lines += _table(["rule id", "checks"], [["yaml", "Bounded YAML load (yaml.* codes)."],
                                             ["schema", "Draft 2020-12 JSON Schema (schema.<keyword> codes)."]]
                    + [[rule, statement] for rule, (_, statement) in RULES.items()])
    lines += ["", f"### Legal tuples ({len(document['legal_tuples'])})", ""]
    lines += _table(
        ["name", "execution", "effect", "acknowledgement", "verification", "checkpoint", "terminal"],
        [[f"`{t['name']}`", t["execution_state"], t["remote_effect"], t["acknowledgement_state"],
          t["verification_state"], t["checkpoint_state"], "yes" if t["name"] in terminal else ""]
         for t in document["legal_tuples"]],
    )
    lines += ["", f"### Transitions ({len(document['transitions'])})", "",
              "Every transition also requires `revision_matches` and advances `revision`.", ""]
    lines += _table(
        ["id", "from", "to", "kind", "CAS preconditions", "advances", "error codes"],
        [[f"`{t['id']}`", f"`{t['from']}`", f"`{t['to']}`", t["kind"],
          ", ".join(p for p in t["cas_preconditions"] if p != "revision_matches"),
          ", ".join(a for a in t["advances"] if a != "revision"),
          ", ".join(t.get("error_codes", []))]
         for t in document["transitions"]],
    )
    lines += ["", END]
    return "\n".join(lines) + "\n"


def render_bundled() -> str:
    document: dict[str, Any] = load_bounded_yaml_file(BUNDLED_CONTRACT)
    return render_tables(document)


def main() -> int:
    sys.stdout.write(render_bundled())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
