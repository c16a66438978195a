// Quotes and forwarded chat records in the transcript: a quoting message shows what it quotes
// above its text (as the Mind kept it when the message was sent), a forwarded record shows
// its items (speaker, text, pictures) as one card, and every message a person or ToBe wrote
// gets a Reply button. The button only announces the reply (a bubbling "reply" event with
// the quoted message); the composer (`composer.js`) shows it and sends `replyTo`.

import { el } from "./dom.js";
import { picturesNode } from "./images.js";

const QUOTE_CHARS = 200;

/** One line of at most QUOTE_CHARS characters, a cut marked with "…". */
export function cut(text) {
  const flat = (text ?? "").split(/\s+/).filter(Boolean).join(" ");
  return flat.length <= QUOTE_CHARS ? flat : `${flat.slice(0, QUOTE_CHARS - 1).trimEnd()}…`;
}

/** What a quote says in one line: the quoted text, or which message's image it quotes. */
export function quoteText(quote) {
  if (quote.hasImages) return `${quote.speaker}'s image #${quote.messageId}${quote.text ? `: ${quote.text}` : ""}`;
  return `${quote.speaker}: ${quote.text ?? ""}`;
}

/** The block a quoting message shows above its text (null when it quotes nothing). */
export function quoteNode(message) {
  const quote = message.quote;
  if (!quote) return null;
  return el(
    "blockquote",
    { className: "quote", "data-quoted-id": quote.messageId ?? message.replyTo ?? "0", "aria-label": "Quoted message" },
    quoteText(quote),
  );
}

/** The card of a forwarded chat record (null when the message forwards none). */
export function forwardedNode(message) {
  const items = message.forwarded ?? [];
  if (!items.length) return null;
  return el(
    "section",
    { className: "forwarded", "aria-label": `Forwarded chat record, ${items.length} ${items.length === 1 ? "message" : "messages"}` },
    el("p", { className: "forwarded-title" }, "Forwarded chat record"),
    el(
      "ol",
      {},
      items.map((item) =>
        el(
          "li",
          {},
          el("span", { className: "speaker" }, `${item.speaker}: `),
          item.text ? el("span", { className: "text", dir: "auto" }, item.text) : null,
          picturesNode(item.images, `forwarded from ${item.speaker}`),
        ),
      ),
    ),
  );
}

/** A Reply button for message `message` said by `speaker` ("You", "ToBe"). Its word is drawn
 * by the stylesheet, as the copy button's is, so a message's text stays only what was written. */
export function replyButton(message, speaker) {
  const quote = {
    messageId: message.id,
    speaker,
    text: cut(message.text),
    hasImages: Boolean(message.images?.length),
  };
  const label = `Reply to ${speaker === "You" ? "your" : `${speaker}'s`} message`;
  return el("button", {
    type: "button",
    className: "reply ghost",
    "aria-label": label,
    title: label,
    onclick: (click) => click.currentTarget.dispatchEvent(new CustomEvent("reply", { bubbles: true, detail: quote })),
  });
}

/** A "Branch from here" button for message `message`: like Reply, it only announces (a
 * bubbling "branch" event with the message's id); the app asks the Mind for the branch and
 * opens it. */
export function branchButton(message) {
  const label = "Branch from here: go on from this message in a new conversation";
  return el("button", {
    type: "button",
    className: "branch ghost",
    "aria-label": "Branch from here",
    title: label,
    onclick: (click) =>
      click.currentTarget.dispatchEvent(new CustomEvent("branch", { bubbles: true, detail: { messageId: message.id } })),
  });
}
