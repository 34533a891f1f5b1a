"""Headless Chromium for the report tests (Debian's ``chromium``, driven by Playwright).

The browser is the system one (``RESTPROOF_CHROMIUM`` or ``chromium`` on PATH): Playwright's own
browser downloads are never used. Without a browser the tests skip with the reason, unless
``RESTPROOF_REQUIRE_BROWSER=1`` (CI), in which case they fail.

``python tests/report/browser_support.py PAGE.html OUT.png [SELECTOR]`` takes a screenshot (how
docs/img/report-grid.png is made).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_REQUIRE = "RESTPROOF_REQUIRE_BROWSER"
ENV_BINARY = "RESTPROOF_CHROMIUM"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


class BrowserUnavailable(RuntimeError):
    pass


def chromium_path() -> str:
    path = os.environ.get(ENV_BINARY) or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise BrowserUnavailable("no chromium on PATH (apt-get install chromium, or set RESTPROOF_CHROMIUM)")
    return path


@dataclass
class PageLog:
    """Everything the page did that a self-contained report must not do."""

    console: list[tuple[str, str]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def problems(self, own_url: str) -> list[str]:
        noisy = [f"console {kind}: {text}" for kind, text in self.console if kind in ("error", "warning")]
        fetched = [f"request: {url}" for url in self.requests if url != own_url]
        return noisy + [f"page error: {e}" for e in self.page_errors] + fetched


@contextmanager
def open_page(html: Path, width: int = 1200, height: int = 900) -> Iterator[tuple[Any, PageLog]]:
    """Load ``html`` from file:// in a fresh profile; every request other than the page is aborted."""
    try:
        from playwright.sync_api import sync_playwright  # imported late: a missing driver is a skip, not an error
    except ImportError as exc:
        raise BrowserUnavailable(f"playwright is not installed ({exc})") from None
    binary = chromium_path()
    url = html.resolve().as_uri()
    log = PageLog()
    with tempfile.TemporaryDirectory(prefix="restproof-chromium-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=binary, headless=True, args=FLAGS, viewport={"width": width, "height": height},
            offline=True)
        try:
            context.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
            page = context.new_page()
            page.on("console", lambda message: log.console.append((message.type, message.text)))
            page.on("pageerror", lambda error: log.page_errors.append(str(error)))
            page.on("request", lambda request: log.requests.append(request.url))
            page.goto(url, wait_until="load")
            yield page, log
        finally:
            context.close()


if __name__ == "__main__":
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    with open_page(source) as (page, log):
        element = page.locator(sys.argv[3]) if len(sys.argv) > 3 else page
        element.screenshot(path=str(target))
        print("\n".join(log.problems(source.resolve().as_uri())) or "no console errors, no requests")
