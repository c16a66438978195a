// How messages, tool calls and status lines look, the same live and in history (as
// `tobe chat` shows them): a person's message, the model's reply as sanitised Markdown, a note;
// a tool call as one collapsible row that shows its projection (tool, arguments summary, state,
// result summary), raw arguments and results only when the event carries them, and progress.
// Tool messages are not shown, their call's row stands for them, except the pictures a tool
// returned. A message's pictures are drawn from their references (`images.js` fetches them); a
// widget message is its card (`widgets.js`).

import { el } from "./dom.js";
import { picturesNode } from "./images.js";
import { renderMarkdown } from "./markdown.js";
import { branchButton, forwardedNode, quoteNode, replyButton } from "./quotes.js";
import { widgetCardNode } from "./widgets.js";

export const TOOL_STATES = {
  TOOL_STATUS_RUNNING: ["⚙", "running"],
  TOOL_STATUS_SUCCEEDED: ["✓", "succeeded"],
  TOOL_STATUS_FAILED: ["✗", "failed"],
  TOOL_STATUS_DENIED: ["⊘", "denied"],
  TOOL_STATUS_SKIPPED: ["↷", "skipped"],
  TOOL_STATUS_CANCELLED: ["⊘", "cancelled"],
};
const RESULT_PREVIEW_CHARS = 600;
// A Hand's tool is named `<hand name>__<tool>` (mind/remote/tools.py; a Hand's name has no
// underscore); its hand id only names one connection of that Hand and means nothing to a person.
const HAND_SEPARATOR = "__";
export const AWAITING_APPROVAL = "waiting for your approval";

/** The name of the Hand that runs `tool` ("" for the Mind's own tools). */
export function handNameOf(tool, handId) {
  if (!handId) return "";
  const qualified = tool ?? "";
  const cut = qualified.indexOf(HAND_SEPARATOR);
  return cut > 0 ? qualified.slice(0, cut) : "a Hand";
}

// How long a copy button says "Copied".
const COPIED_MS = 1500;

export function sizeText(bytes) {
  const size = Number(bytes || 0);
  if (size < 1024 * 1024) return `${Math.max(1, Math.round(size / 1024))} KB`;
  return `${(size / (1024 * 1024)).toFixed(1)} MB`;
}

/** Markdown of `text` into `node` (replacing what it held); each code block gets a copy button. */
export function fillMarkdown(node, text) {
  const fragment = renderMarkdown(text);
  for (const block of fragment.querySelectorAll("pre")) {
    const code = block.textContent;
    block.replaceWith(el("div", { className: "code-block" }, block.cloneNode(true), copyButton(() => code, "Copy code")));
  }
  node.replaceChildren(fragment);
}

/** A button that puts `text()` on the clipboard and says so for a moment. Its word is drawn
 * by the stylesheet (data-copied), so a message's text stays only what was written. */
export function copyButton(text, label) {
  const button = el("button", { type: "button", className: "copy ghost", "aria-label": label, title: label });
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text());
      button.dataset.copied = "yes";
    } catch {
      button.dataset.copied = "failed";
    }
    setTimeout(() => delete button.dataset.copied, COPIED_MS);
  });
  return button;
}

/** A stored message's element; tool messages get one only for their pictures (`toolName`
 * names the tool that returned them). */
export function messageNode(message, { toolName = "" } = {}) {
  const role = message.role ?? "MESSAGE_ROLE_UNSPECIFIED";
  const id = message.id ?? "0";
  if (role === "MESSAGE_ROLE_USER") {
    return el(
      "article",
      { className: "msg user", "data-message-id": id, "aria-label": "You" },
      quoteNode(message),
      picturesNode(message.images, "sent by you"),
      message.text ? el("p", { className: "text", dir: "auto" }, message.text) : null,
      forwardedNode(message),
      message.text ? copyButton(() => message.text, "Copy message") : null,
      replyButton(message, "You"),
      branchButton(message),
    );
  }
  if (role === "MESSAGE_ROLE_TOOL") {
    const from = toolName ? `returned by ${toolName}` : "returned by a tool";
    const pictures = picturesNode(message.images, from);
    return pictures && el("article", { className: "msg tool-images", "data-message-id": id, "aria-label": `Images ${from}` }, pictures);
  }
  if (role === "MESSAGE_ROLE_ASSISTANT") {
    if (message.widget) {
      // The card stands for the message; its text is how the model is shown the widget.
      return el("article", { className: "msg assistant widget", "data-message-id": id, "aria-label": "ToBe sent a widget" }, widgetCardNode(message.widget));
    }
    const node = el("article", { className: "msg assistant", "data-message-id": id, "aria-label": "ToBe" });
    const pictures = picturesNode(message.images, "sent by ToBe");
    if (pictures) node.append(pictures);
    if (message.postedBy) node.append(el("p", { className: "posted" }, `posted by ${message.postedBy}`));
    if (message.thinking) {
      node.append(el("details", { className: "thinking" }, el("summary", {}, "Thinking"), el("p", { dir: "auto" }, message.thinking)));
    }
    if (message.text) {
      const body = el("div", { className: "md", dir: "auto" });
      fillMarkdown(body, message.text);
      node.append(body, copyButton(() => message.text, "Copy message"), replyButton(message, "ToBe"), branchButton(message));
    }
    // A step that only called tools says nothing; its rows follow.
    node.hidden = !message.text && !message.thinking && !message.postedBy && !pictures;
    return node;
  }
  if (role === "MESSAGE_ROLE_NOTE") {
    return el(
      "article",
      { className: "msg note", "data-message-id": id },
      el("p", { dir: "auto" }, `note: ${message.text ?? ""}`),
      picturesNode(message.images, "from an observation"),
    );
  }
  return null;
}

export function statusNode(text, kind = "") {
  return el("p", { className: `status ${kind}`.trim() }, text);
}

function prettyJson(text) {
  if (!text) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function preview(text) {
  return text.length > RESULT_PREVIEW_CHARS ? `${text.slice(0, RESULT_PREVIEW_CHARS)}… (${text.length} chars)` : text;
}

/** A tool call's row, from its projection. */
export function toolNode(projection) {
  const node = el("details", { className: "tool", "data-tool-call-id": projection.toolCallId });
  updateTool(node, projection);
  return node;
}

/** A row for a call known only from its assistant message (its projection is missing). */
export function toolNodeFromCall(call, answer) {
  const status = answer ? (answer.isError ? "TOOL_STATUS_FAILED" : "TOOL_STATUS_SUCCEEDED") : "TOOL_STATUS_RUNNING";
  return toolNode({
    toolCallId: call.id,
    tool: call.name,
    status,
    resultSummary: answer ? answer.resultSummary || answer.text || "" : "",
  });
}

/** Show `projection` in the row: its state, summaries and (when carried) raw content. */
export function updateTool(node, projection) {
  const status = projection.status ?? "TOOL_STATUS_UNSPECIFIED";
  const [mark, state] = TOOL_STATES[status] ?? ["•", "unknown"];
  node.dataset.state = state;
  const progress = node.querySelector(".tool-progress");
  const summary = el(
    "summary",
    {},
    el("span", { className: "tool-mark", "aria-hidden": "true" }, mark),
    el("span", { className: "tool-name" }, projection.tool ?? ""),
    projection.handId ? el("span", { className: "tool-hand" }, `on ${handNameOf(projection.tool, projection.handId)}`) : null,
    el("span", { className: "tool-state" }, state),
    el("span", { className: "tool-args" }, projection.argumentsSummary ?? ""),
    projection.resultSummary ? el("span", { className: "tool-result-summary" }, projection.resultSummary) : null,
  );
  const body = el(
    "div",
    { className: "tool-body" },
    state === "running" ? progress ?? el("p", { className: "tool-progress", hidden: true }) : null,
    el("p", { className: "tool-line" }, `arguments: ${projection.argumentsSummary || "none"}`),
    projection.argumentsJson ? el("pre", { className: "tool-raw-args" }, prettyJson(projection.argumentsJson)) : null,
    projection.resultSummary ? el("p", { className: "tool-line" }, `result: ${projection.resultSummary}`) : null,
    projection.resultText ? el("pre", { className: "tool-result" }, preview(projection.resultText)) : null,
  );
  node.replaceChildren(summary, body);
}

/** The latest progress of a running call, beside its state. */
export function showToolProgress(node, progress) {
  if (node.dataset.state !== "running") return; // late progress of an ended call
  const fraction = Number(progress.fraction ?? 0);
  const share = fraction >= 0 ? ` ${Math.round(fraction * 100)}%` : "";
  const text = `${progress.message ?? ""}${share}`.trim();
  if (!text) return;
  const line = node.querySelector(".tool-progress");
  line.textContent = text;
  line.hidden = false;
  node.querySelector(".tool-state").textContent = `running — ${text}`;
}

/** A running call whose approval waits for the person says so, not "running". */
export function markAwaitingApproval(node, waiting) {
  const label = node.querySelector(".tool-state");
  if (waiting && node.dataset.state === "running") {
    node.dataset.state = "waiting";
    label.textContent = AWAITING_APPROVAL;
  } else if (!waiting && node.dataset.state === "waiting") {
    node.dataset.state = "running";
    label.textContent = "running";
  }
}
