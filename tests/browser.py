"""Headless Chromium for tests of loopc's HTML and SVG output (Playwright driving Debian's Chromium).

``make test`` installs Chromium where apt is at hand; elsewhere the tests that need it skip with
the reason. Pages are opened from ``file://`` URLs with the network off, so a page that needs
anything from outside itself shows up as a console error.
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# without the background-networking flags Chromium keeps trying the network, which is closed here
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]


@dataclass
class OpenedPage:
    """A page as Chromium rendered it: the Playwright page, and every console error and failed request."""

    page: Any
    errors: list[str] = field(default_factory=list)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (skips without Chromium or Playwright)."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("Chromium is not installed (make test installs it where apt is available)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


def open_page(browser: Any, path: pathlib.Path, screenshot: pathlib.Path | None = None) -> OpenedPage:
    """Open ``path`` offline, wait until it has loaded, optionally take a full-page screenshot."""
    context = browser.new_context(offline=True)
    page = context.new_page()
    opened = OpenedPage(page)
    page.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: opened.errors.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda request: opened.errors.append(f"request failed: {request.url}"))
    page.goto(path.resolve().as_uri(), wait_until="load")
    if screenshot is not None and path.suffix.lower() == ".svg":  # a full-page capture never ends on an SVG document
        page.locator(":root").screenshot(path=str(screenshot))
    elif screenshot is not None:
        page.screenshot(path=str(screenshot), full_page=True)
    return opened
