"""`certify report`: a self-contained page (no fetch of any kind), hostile artifact strings
escaped, a grid cell per row and sink linking to its row, signature and history binding shown
and enforced through the exit code, the gate run against a baseline, and clear errors for bad
input."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_support import HOSTILE, SINKS, bench_document, make_run
from typer.testing import CliRunner

from certification.canonical_json import canonical_bytes, with_content_digest
from certification.cli import app
from certification.coverage import coverage
from certification.gate import ARTIFACTS
from certification.history_artifacts import history_path
from certification.scenarios import bundled_rows

runner = CliRunner()
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"  # the brief's policy, spelled out


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    return parser


def _report(run: Path, *args: str) -> tuple[int, str, str]:
    out = run / "page.html"
    result = runner.invoke(app, ["report", str(run), "--out", str(out), *args])
    return result.exit_code, result.output, out.read_text(encoding="utf-8") if out.exists() else ""


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run")


def test_the_page_fetches_nothing_and_says_so_in_its_csp(run: Path) -> None:
    code, output, page = _report(run)
    assert code == 0, output
    tags = _parse(page).tags
    csp = [a for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [{"http-equiv": "Content-Security-Policy", "content": CSP}]
    assert tags[0][0] == "html" and tags[2] == ("meta", csp[0])  # first in <head>, before anything loads
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe", "object", "embed", "image", "use")]
    for tag, attrs in tags:
        for name, value in attrs.items():
            if name in ("href", "src", "xlink:href", "action", "srcset", "poster"):
                assert value is not None and value.startswith("#"), (tag, name, value)
    assert "url(" not in page and "@import" not in page


def test_hostile_artifact_strings_are_text_never_markup(run: Path) -> None:
    code, _, page = _report(run)
    assert code == 0
    parsed = _parse(page)
    assert not [t for t, _ in parsed.tags if t in ("script", "img")]
    assert "<script>" not in page and "&lt;script&gt;window.__pwned" in page
    text = "".join(parsed.text)
    assert text.count(HOSTILE) >= 3  # the row id in the grid and its section, the reason, the plot title


def test_the_grid_has_a_cell_per_row_and_sink_linking_to_that_rows_section(run: Path) -> None:
    _, _, page = _report(run)
    tags = _parse(page).tags
    ids = {a["id"] for _, a in tags if a.get("id")}
    cells = [a for t, a in tags if t == "td" and "cell" in (a.get("class") or "").split()]
    assert len(cells) == 3 * len(SINKS)
    grid = page[page.index('id="grid"'):page.index("</table>", page.index('id="grid"'))]
    links = re.findall(r'<td class="cell [^"]+" data-verdict="[^"]*"><a href="#([^"]+)"', grid)
    assert len(links) == len(cells) and set(links) <= ids
    assert {a["data-verdict"] for a in cells} == {"PASS", "FAIL", "CAUGHT", "OBSERVED"}
    classes = {a["data-verdict"]: a["class"] for a in cells}
    assert classes["PASS"] == "cell v-pass" and classes["FAIL"] == "cell v-fail"


def test_each_history_is_drawn_on_three_lanes_and_a_duplicate_is_marked(run: Path) -> None:
    _, _, page = _report(run)
    tags = _parse(page).tags
    timelines = [a for t, a in tags if t == "svg" and a.get("class") == "timeline"]
    assert len(timelines) == 2 * len(SINKS)  # the hostile row id is no safe file name: no history for it
    marks = [a["class"] for t, a in tags if t == "rect" and (a.get("class") or "").startswith("m-")]
    # per timeline two sink marks, two proxy marks, one or two effects; naive-retry and the failed
    # reference run duplicated (3 duplicates in all)
    assert marks.count("m-duplicate") == 3
    assert marks.count("m-info") == 6 and marks.count("m-ok") == 6 * 3
    assert page.count("history bound to the signed matrix") == 6
    assert page.count("no history on disk") == 3


def test_a_run_without_bench_artifacts_renders_and_says_so(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", bench=False)
    code, _, page = _report(run)
    assert code == 0
    assert "No bench artifacts in this run" in page and 'class="chart"' not in page


def test_bench_series_are_plotted_inside_the_axes(run: Path) -> None:
    _, _, page = _report(run)
    tags = _parse(page).tags
    lines = [a for t, a in tags if t == "polyline"]
    assert len(lines) == len(bench_document()["series"]["rss_over_size"]["lines"])
    for line in lines:
        points = [tuple(map(float, p.split(","))) for p in (line["points"] or "").split()]
        assert len(points) == 2
        assert all(70 <= x <= 370 and 20 <= y <= 250 for x, y in points)
    assert "naive_over_reference_rss_1gb" in page and "24.5" in page


def test_bench_checks_and_verdict_are_shown(run: Path) -> None:
    _, _, page = _report(run)
    bench = page[page.index('<h2 id="bench">'):page.index('<h2 id="rows">')]
    assert '<span class="banner v-fail">FAIL</span>' in bench
    assert re.search(r"<td>ledger_matches</td><td class=\"sig-ok\">passed</td>", bench)
    assert re.search(r"<td>rss_bounded</td><td class=\"sig-bad\">FAILED</td>", bench)
    assert "shared 2-core machine are noise" in bench


def test_a_tampered_artifact_is_shown_unverified_and_exits_4(run: Path) -> None:
    matrix = run / ARTIFACTS / "remote_effect_fault_matrix.json"
    matrix.write_bytes(matrix.read_bytes().replace(b'"CAUGHT"', b'"PASS!!"', 1))
    code, output, page = _report(run)
    assert code == 4 and "NOT trusted" in output
    assert "NOT TRUSTED: a signature does not verify" in page
    signatures = page[page.index('id="signature-table"'):page.index('<h2 id="bench">')]
    assert "subject_mismatch" in signatures and signatures.count(">FAILED<") == 2  # both envelopes of the matrix


def test_a_missing_envelope_is_a_failed_signature(run: Path) -> None:
    (run / ARTIFACTS / "rss_benchmark.json.dsse.json").unlink()
    code, _, page = _report(run)
    assert code == 4 and "unreadable" in page


def test_another_key_does_not_verify(run: Path, tmp_path: Path) -> None:
    other = make_run(tmp_path / "other", bench=False)
    code, _, page = _report(run, "--key", str(other / "keys" / "restproof-evidence.pub"))
    assert code == 4 and "bad_signature" in page


def test_a_history_that_is_not_the_signed_one_is_not_trusted(run: Path) -> None:
    path = next((run / ARTIFACTS / "histories").glob("*/naive-retry.json"))
    document = json.loads(path.read_bytes())
    assert len(document["effects"]) == 2
    document["effects"] = document["effects"][:1]  # hide the duplicate
    path.write_bytes(canonical_bytes(document))
    code, _, page = _report(run)
    assert code == 4 and "HISTORY NOT TRUSTED" in page


def test_histories_on_disk_are_the_digests_the_matrix_states(run: Path) -> None:
    matrix = json.loads((run / ARTIFACTS / "remote_effect_fault_matrix.json").read_bytes())
    checked = 0
    for row in matrix["rows"]:
        for sink, cell in row["sinks"].items():
            path = run / ARTIFACTS / "histories" / row["row_id"] / f"{sink}.json"
            if row["row_id"] == HOSTILE:
                assert not path.exists()
                continue
            assert cell["history_digest"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            checked += 1
    assert checked == 2 * len(SINKS)


def test_the_gate_runs_against_a_baseline(run: Path, tmp_path: Path) -> None:
    baseline = make_run(tmp_path / "baseline", hostile=False, key=run / "keys" / "restproof-evidence.key")
    key = str(run / "keys" / "restproof-evidence.pub")
    code, _, page = _report(run, "--baseline", str(baseline), "--baseline-key", key, "--key", key)
    assert code == 4  # the certified sink failed a row, and a baseline row is missing now
    assert 'id="gate-verdict">gate:\nFAIL' in page
    assert "in the baseline, missing now" in page and "reference: duplicates = 1" in page
    assert "the current run&#39;s own signed verdict is FAIL, not PASS" in page
    code, _, page = _report(baseline, "--baseline", str(baseline), "--baseline-key", key, "--key", key)
    assert "reference: duplicates = 1" in page and code == 4


def test_an_equal_clean_baseline_passes_the_gate(tmp_path: Path) -> None:
    clean = make_run(tmp_path / "clean", hostile=False, bench=False, failing=False)
    key = str(clean / "keys" / "restproof-evidence.pub")
    code, output, page = _report(clean, "--baseline", str(clean), "--baseline-key", key, "--key", key)
    assert code == 0, output
    assert 'id="gate-verdict">gate:\nPASS (3 rows compared)' in page


@pytest.mark.parametrize(("damage", "message"), [
    (lambda base: (base / "remote_effect_fault_matrix.json").unlink(), "remote_effect_fault_matrix.json is missing"),
    (lambda base: (base / "certification_summary.json").write_bytes(b"{not json"), "is not JSON"),
    (lambda base: (base / "remote_effect_fault_matrix.json").write_bytes(b'{"rows": [{"row_id": 3}]}'),
     "rows.0.row_id"),
])
def test_unreadable_evidence_is_a_clear_exit_2(run: Path, damage, message: str) -> None:
    damage(run / ARTIFACTS)
    code, output, page = _report(run)
    assert code == 2 and message in output and "Traceback" not in output and page == ""


def test_a_bench_with_a_non_finite_number_is_shown_unreadable(run: Path) -> None:
    document = bench_document()
    path = run / ARTIFACTS / "odd_benchmark.json"
    text = json.dumps(with_content_digest(document)).replace("24.5", "Infinity")
    path.write_text(text)
    code, _, page = _report(run)
    assert code == 4 and "odd_benchmark.json: ratios" in page


def test_baseline_needs_its_key(run: Path) -> None:
    code, output, _ = _report(run, "--baseline", str(run))
    assert code == 2 and "--baseline and --baseline-key go together" in output


def test_the_gate_never_takes_the_current_key_from_inside_the_run(run: Path) -> None:
    key = str(run / "keys" / "restproof-evidence.pub")
    code, output, page = _report(run, "--baseline", str(run), "--baseline-key", key)
    assert code == 2 and "--key is required with --baseline" in output and page == ""


def test_an_empty_directory_is_exit_2(tmp_path: Path) -> None:
    code, output, _ = _report(tmp_path)
    assert code == 2 and "missing" in output


@pytest.mark.parametrize("target", ["test_artifacts/connectors/rest/remote_effect_fault_matrix.json",
                                    "keys/restproof-evidence.pub", "test_artifacts/new.html"])
def test_the_page_is_never_written_over_evidence_or_keys(run: Path, target: str) -> None:
    path = run / target
    before = path.read_bytes() if path.exists() else None
    result = runner.invoke(app, ["report", str(run), "--out", str(path)])
    assert result.exit_code == 2 and "never written among the evidence" in result.output
    assert (path.read_bytes() if path.exists() else None) == before


@pytest.mark.parametrize("name", ["..", "../x", "a/b", ".hidden", "", "A", "x" * 200])
def test_history_files_are_found_by_safe_names_only(tmp_path: Path, name: str) -> None:
    assert history_path(tmp_path, name, "reference") is None
    assert history_path(tmp_path, "sync.none", name) is None
    assert history_path(tmp_path, "sync.none", "reference") == tmp_path / "histories" / "sync.none" / "reference.json"


def test_the_coverage_section_states_the_figure_and_this_journals_share(tmp_path: Path) -> None:
    # The summary's fault_space as the run writes it (certification.coverage), read by the page.
    rows = [row for row in bundled_rows() if row.row_id.startswith("sync.")][:3]
    facts = {"fault_space": coverage(rows, "sqlite").as_dict(), "seconds": {"wall": 12.0, "cpu": 20.5}}
    run = make_run(tmp_path / "run", hostile=False, bench=False, run_facts=facts)
    code, _, page = _report(run)
    space = facts["fault_space"]
    assert code == 0 and page
    assert f"{space['covered']} of {space['meaningful']}" in page
    assert f"of the sqlite journal's {space['journal_meaningful']}" in page
    assert "a run covers one journal; the postgres journal" in page  # the not-yet table with its reasons
