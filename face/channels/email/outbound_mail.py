"""The agent's reply as a mail: the Markdown as text/plain, rendered HTML beside it.

Its Message-ID is derived from the bridge's idempotency key, so a reply sent again after a
crash carries the same id and mail clients show it once.
"""

from __future__ import annotations

import hashlib
import re
from email.message import EmailMessage
from email.utils import formatdate

import nh3
from markdown_it import MarkdownIt

from face.channels.transport import Image

# CommonMark without raw HTML: markup the model writes is shown as text, not rendered.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
_REPLY_PREFIX = re.compile(r"^\s*((re|aw|sv|fwd?|wg)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)


def reply_subject(subject: str) -> str:
    """`Re: ` and the subject without the prefixes replies already added."""
    return f"Re: {base_subject(subject)}"


def base_subject(subject: str) -> str:
    return _REPLY_PREFIX.sub("", " ".join(subject.split()))


def message_id_for(key: str, address: str) -> str:
    """The same Message-ID for the same idempotency key, in the domain of `address`."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"<{digest}@{address.rpartition('@')[2]}>"


def sanitized_html(markdown: str) -> str:
    return nh3.clean(_MARKDOWN.render(markdown))


def compose_reply(
    *,
    from_address: str,
    to: str,
    subject: str,
    message_id: str,
    in_reply_to: str,
    references: list[str],
    text: str,
    images: tuple[Image, ...],
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = from_address
    message["To"] = to
    message["Subject"] = reply_subject(subject)
    message["Date"] = formatdate(localtime=True)
    message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
    if references:
        message["References"] = " ".join(references)
    # RFC 3834: other automatic responders must not answer this one.
    message["Auto-Submitted"] = "auto-replied"
    message.set_content(text)
    message.add_alternative(f"<html><body>{sanitized_html(text)}</body></html>", subtype="html")
    for number, image in enumerate(images, 1):
        maintype, _, subtype = image.media_type.partition("/")
        message.add_attachment(
            image.data,
            maintype=maintype or "application",
            subtype=subtype or "octet-stream",
            filename=image.name or f"image-{number}.{subtype or 'bin'}",
        )
    return message
