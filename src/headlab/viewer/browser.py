"""Open a viewer page in headless Chromium (Debian's ``chromium``, driven by Playwright) — for the tests and
``headlab view --check``: load time, console errors, network requests, a screenshot.

Chromium is started with the flags that keep it from phoning home (background networking, component updates,
sync), so any request the page makes is the page's own and is reported."""

from __future__ import annotations

import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from headlab.errors import HeadlabError

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@contextmanager
def open_page(html: str | Path, width: int = 1400, height: int = 900,
              ready: str | None = "body[data-ready='1']") -> Iterator[tuple[Any, dict[str, Any]]]:
    """Yield ``(page, log)``: a page (the viewer, a report) loaded from ``file://``; ``log`` collects
    ``console_errors``, ``page_errors``, ``requests`` (every URL other than the file itself) and ``load_s``
    (seconds until the ``ready`` selector appears: the viewer sets ``data-ready``; None: the load event)."""
    try:
        # deferred: playwright is optional (dev: the browser tests)
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - dev dependency
        raise HeadlabError("the browser check needs Playwright: pip install playwright") from None
    exe = chromium_path()
    if exe is None:
        raise HeadlabError("no Chromium found: apt-get install chromium (make browser does it)")
    url = Path(html).resolve().as_uri()
    log: dict[str, Any] = {"console_errors": [], "page_errors": [], "requests": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("console", lambda m: log["console_errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: log["page_errors"].append(str(e)))
            page.on("request", lambda r: log["requests"].append(r.url) if r.url != url else None)
            t0 = time.perf_counter()
            page.goto(url, wait_until="load")
            if ready is not None:
                page.wait_for_selector(ready, timeout=30_000)
            log["load_s"] = time.perf_counter() - t0
            yield page, log
        finally:
            browser.close()
