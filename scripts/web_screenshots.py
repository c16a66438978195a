"""Take the README's and docs/web-client.md's pictures of the web client from the running
client: the browser tests' stack (a real Mind with a scripted model, a Face, a Hand) and Debian's
Chromium, at desktop (1280×800) and phone (390×844) sizes, on a conversation with a Markdown
reply, a tool call and an approval waiting.

    python scripts/web_screenshots.py     # writes docs/images/web-client*.png
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "web"), str(ROOT / "tests"), str(ROOT)]

from playwright.sync_api import expect, sync_playwright  # noqa: E402
from web_stack import running_stack  # noqa: E402
from web_steps import WAIT_MS, new_conversation, send, sign_in  # noqa: E402

IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
SIZES = {
    "web-client.png": {"viewport": {"width": 1280, "height": 800}},
    "web-client-phone.png": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
    },
}


def main() -> None:
    # No options: --help says what is drawn, and anything else is refused before drawing.
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.parse_args()
    expect.set_options(timeout=WAIT_MS)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with tempfile.TemporaryDirectory() as root, running_stack(Path(root)) as stack:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            try:
                for name, options in SIZES.items():
                    page = browser.new_context(**options).new_page()  # type: ignore[arg-type]
                    sign_in(page, stack)
                    new_conversation(page, "Evening plans", unique=False)
                    send(page, "tour of the day")
                    expect(page.locator("#log article.assistant em")).to_have_text("evening")
                    send(page, "save my plan")
                    card = page.locator("section.approval")
                    expect(card.locator(".approval-outcome")).to_have_text(
                        "Waiting for your decision"
                    )
                    card.scroll_into_view_if_needed()
                    page.screenshot(path=str(IMAGES / name))
                    print(f"wrote {IMAGES / name}")
            finally:
                browser.close()


if __name__ == "__main__":
    main()
