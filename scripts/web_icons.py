"""Draw the web client's PNG icons from its SVG ones, in Debian's Chromium (as the browser tests
drive it), so the installable app's icons and the page's favicon stay one drawing.

    python scripts/web_icons.py     # writes face/web/static/icons/*.png
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from playwright.sync_api import sync_playwright

ICONS = Path(__file__).resolve().parents[1] / "face" / "web" / "static" / "icons"
CHROMIUM = "/usr/bin/chromium"
# (source SVG, size in pixels, PNG written)
PNGS = [
    ("icon.svg", 192, "icon-192.png"),
    ("icon.svg", 512, "icon-512.png"),
    ("maskable.svg", 512, "maskable-512.png"),
]


def main() -> None:
    # No options: --help says what is drawn, and anything else is refused before drawing.
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.parse_args()
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            for source, size, target in PNGS:
                page = browser.new_page(viewport={"width": size, "height": size})
                svg = (ICONS / source).read_text()
                sized = svg.replace("<svg ", f'<svg width="{size}" height="{size}" ', 1)
                page.set_content(f"<body style='margin:0'>{sized}</body>")
                page.screenshot(path=str(ICONS / target), omit_background=True)
                page.close()
                print(f"wrote {ICONS / target}")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
