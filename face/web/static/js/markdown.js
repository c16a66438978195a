// Model output as Markdown, never as trusted HTML: marked turns Markdown into HTML with raw
// HTML shown as text and images shown as their description, then DOMPurify removes anything
// that could still run or load (defence in depth). Links open in a new tab without access to
// this page (rel="noopener noreferrer").
import { Marked } from "../vendor/marked.esm.js";
import DOMPurify from "../vendor/purify.es.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    // Raw HTML in the text is shown as the text it is.
    html(token) {
      return escapeHtml(token.text);
    },
    // No image is loaded from a URL the model chose (it could track whoever reads it).
    image(token) {
      return escapeHtml(token.text ? `[image: ${token.text}]` : "[image]");
    },
  },
});

const SANITIZE = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["img", "style", "form", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "srcset"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

// Each block takes its direction from its own first words (Hebrew, Arabic or Latin); code stays
// left to right.
const OWN_DIRECTION = new Set(["P", "LI", "H1", "H2", "H3", "H4", "H5", "H6", "BLOCKQUOTE", "TD", "TH"]);

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (OWN_DIRECTION.has(node.tagName)) node.setAttribute("dir", "auto");
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** A DocumentFragment of `text` rendered as sanitised Markdown. */
export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text), SANITIZE);
}
