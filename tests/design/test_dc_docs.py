"""The reference page and the committed contract stay identical to their generators."""

from __future__ import annotations

import json
from pathlib import Path

from dc_mutations import mutated

from sink.design.docs_tables import BEGIN, END, render_bundled
from sink.design.validator import ALL_RULE_IDS, validate_document

DOC = Path(__file__).resolve().parents[2] / "docs" / "design-contract.md"


def test_generated_tables_in_the_doc_are_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] + "\n" == render_bundled()


def test_doc_names_every_rule_id() -> None:
    text = DOC.read_text(encoding="utf-8")
    for rule in ALL_RULE_IDS:
        assert f"| {rule} |" in text, rule


def test_doc_example_report_is_what_the_validator_says() -> None:
    text = DOC.read_text(encoding="utf-8")
    example = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    findings = [f.to_dict() for f in validate_document(mutated("terminal_closure"))]
    assert example["findings"] == findings
