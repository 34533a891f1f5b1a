"""The report in a real browser: headless Chromium loads the page with no console error and no
network request, the grid has a cell per row and sink in the verdicts' colours (DOM and pixels),
hostile strings stay text, and the screenshot is kept as a test artifact."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser_support import ENV_REQUIRE, BrowserUnavailable, chromium_path, open_page
from report_support import HOSTILE, SINKS, make_run
from typer.testing import CliRunner

from certification.cli import app

PASS_RGB = (46, 125, 50)
FAIL_RGB = (198, 40, 40)
CAUGHT_RGB = (249, 168, 37)


@pytest.fixture(scope="module", autouse=True)
def browser_available() -> None:
    try:
        chromium_path()
        import playwright.sync_api  # noqa: F401
    except (BrowserUnavailable, ImportError) as exc:
        if os.environ.get(ENV_REQUIRE) == "1":
            pytest.fail(f"a browser is required ({ENV_REQUIRE}=1) but unavailable: {exc}", pytrace=False)
        pytest.skip(f"no headless browser: {exc}")


def _keep(path: Path) -> None:
    """CI keeps screenshots beside its other artifacts when it names a directory for them."""
    directory = os.environ.get("RESTPROOF_TEST_ARTIFACTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(directory) / path.name)


def _pixels(png: Path, rgb: tuple[int, int, int]) -> int:
    from PIL import Image

    with Image.open(png) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    return sum(count for count, colour in colours if colour == rgb)


def test_chromium_loads_the_report_with_no_error_and_no_request(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    page_file = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(run), "--out", str(page_file)])
    assert result.exit_code == 0, result.output
    with open_page(page_file) as (page, log):
        cells = page.eval_on_selector_all("#grid td.cell", "cells => cells.map(c => c.dataset.verdict)")
        targets = page.eval_on_selector_all(
            "#grid td.cell a", "links => links.map(a => !!document.getElementById(a.hash.slice(1)))")
        hostile_header = page.locator("#grid th.row").nth(2).inner_text()
        pwned = page.evaluate("() => window.__pwned === undefined")
        pass_colour = page.eval_on_selector("#grid td.v-pass", "c => getComputedStyle(c).backgroundColor")
        timelines = page.locator("svg.timeline").count()
        grid_png = tmp_path / "report-grid.png"
        page.locator("#grid").screenshot(path=str(grid_png))
        page.screenshot(path=str(tmp_path / "report-page.png"), full_page=True)
    _keep(grid_png)
    assert log.problems(page_file.resolve().as_uri()) == []
    assert len(cells) == 3 * len(SINKS) and all(targets) and len(targets) == len(cells)
    assert sorted(set(cells)) == ["CAUGHT", "FAIL", "OBSERVED", "PASS"]
    assert hostile_header.replace("\n", " ") == HOSTILE.replace("\n", " ") and pwned
    assert pass_colour == "rgb(46, 125, 50)"
    assert timelines == 2 * len(SINKS)
    # the screenshot shows the grid: the verdict colours fill their cells (each cell is >= 100x40 px)
    assert _pixels(grid_png, PASS_RGB) > 2 * 3000
    assert _pixels(grid_png, FAIL_RGB) > 3000
    assert _pixels(grid_png, CAUGHT_RGB) > 3 * 3000


def test_the_detector_sees_a_fetch_and_a_console_error(tmp_path: Path) -> None:
    """The check above can fail: a page that fetches an image is caught twice (request + CSP error)."""
    page_file = tmp_path / "leaky.html"
    page_file.write_text(
        "<!DOCTYPE html><meta http-equiv='Content-Security-Policy' content=\"default-src 'none'\">"
        "<p>x</p><img src='http://127.0.0.1:9/pixel.png'>", encoding="utf-8")
    with open_page(page_file) as (_, log):
        pass
    problems = log.problems(page_file.resolve().as_uri())
    assert any(p.startswith("request: http://127.0.0.1:9/pixel.png") for p in problems)
    assert any(p.startswith("console error") for p in problems)
