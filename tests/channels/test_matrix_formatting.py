"""What a Matrix message's HTML may hold, and the reply fallback people's messages start with."""

from __future__ import annotations

from face.channels.matrix.events import without_reply_fallback
from face.channels.matrix.formatting import text_content, to_html


def test_markdown_is_rendered() -> None:
    html = to_html("**bold** and `code`\n\n- one\n- two")
    assert html == (
        "<p><strong>bold</strong> and <code>code</code></p>\n"
        "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"
    )


def test_raw_html_is_shown_as_text_never_as_markup() -> None:
    html = to_html("<script>alert(1)</script> <b>x</b>")
    assert "<script" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html


def test_an_image_keeps_only_a_matrix_source() -> None:
    assert "<img" in to_html("![a](mxc://example.org/abc)")
    assert "http://tracker" not in to_html("![a](http://tracker.example/pixel.png)")


def test_links_keep_web_schemes_and_code_its_language() -> None:
    assert 'href="https://example.org"' in to_html("[site](https://example.org)")
    assert 'class="language-python"' in to_html("```python\nx = 1\n```")


def test_a_message_keeps_its_markdown_as_the_plain_body() -> None:
    content = text_content("*hi*")
    assert content == {
        "msgtype": "m.text",
        "body": "*hi*",
        "format": "org.matrix.custom.html",
        "formatted_body": "<p><em>hi</em></p>",
    }


def test_the_quoted_lines_of_a_reply_are_dropped() -> None:
    body = "> <@bot:example.org> Shall I?\n> second line\n\nYes please\n> not a quote"
    assert without_reply_fallback(body) == "Yes please\n> not a quote"
    assert without_reply_fallback("no quote") == "no quote"
