"""The bundled design contract's files, and the SHA-256 of their bytes as validated in full by the tests.

``tests/design/test_dc_validated_digest.py`` fails when ``contract.yaml`` changes and this digest
does not (or when the contract no longer validates), so a process may trust bytes with this digest
without validating them again (``sink.design.query._bundled``). Regenerate after editing the
contract: ``python -m sink.design.validated_digest``.
"""

from __future__ import annotations

from pathlib import Path

# Beside this module, as ``importlib.resources.files("sink.design")`` finds it for an installed
# package (a path on disk: the readers need one), without importing the resource readers in every
# delivery process (start-up cost).
BUNDLED_CONTRACT = Path(__file__).with_name("contract.yaml")
BUNDLED_CONTRACT_JSON = BUNDLED_CONTRACT.with_name("contract.json")
"""The same document as JSON, written by ``python -m sink.design.validated_digest``."""

VALIDATED_CONTRACT_SHA256 = "463f3171ab22302b8c3c440ab9889abdab5b7ace2d34adf45dc737c7f05bcb6e"


VALIDATED_CONTRACT_JSON_SHA256 = "f4f7f362900a5a5ff963eede51b7fb8077886463efb813c9aea8f95f4f5d4fff"


def current_digest() -> str:
    import hashlib  # noqa: PLC0415

    return hashlib.sha256(BUNDLED_CONTRACT.read_bytes()).hexdigest()


def json_twin(document: object) -> bytes:
    """The contract document as the JSON twin stores it (sorted keys, no spaces)."""
    import json  # noqa: PLC0415

    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def main() -> int:
    """Validate the bundled contract in full, then pin its digest here (a maintainer's step)."""
    import hashlib  # noqa: PLC0415
    import pathlib  # noqa: PLC0415
    import re  # noqa: PLC0415

    from sink.bounded_yaml import load_bounded_yaml_file  # noqa: PLC0415
    from sink.design.validator import validate_document  # noqa: PLC0415

    document = load_bounded_yaml_file(BUNDLED_CONTRACT)
    findings = validate_document(document)
    if findings:
        print(f"the bundled contract does not validate ({len(findings)} findings): nothing pinned")
        return 2
    twin = json_twin(document)
    BUNDLED_CONTRACT_JSON.write_bytes(twin)
    here = pathlib.Path(__file__)
    text = re.sub(r'VALIDATED_CONTRACT_SHA256 = "[0-9a-f]+"', f'VALIDATED_CONTRACT_SHA256 = "{current_digest()}"',
                  here.read_text(encoding="utf-8"))
    text = re.sub(r'VALIDATED_CONTRACT_JSON_SHA256 = "[0-9a-f]+"',
                  f'VALIDATED_CONTRACT_JSON_SHA256 = "{hashlib.sha256(twin).hexdigest()}"', text)
    here.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover - a maintainer's step
    raise SystemExit(main())
