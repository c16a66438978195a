// The nested card of a `delegate` call: what its child run (a sub-agent) does — its latest tool
// calls with their states and summaries, and its latest text. The Mind sends the child's whole
// view on each progress of the call and again in every snapshot, so a card is drawn from one
// view and simply replaced by the next; it survives a reload. The card sits right after its
// call's row (a row is redrawn on each change of the call) and folds like any other card.

import { el } from "./dom.js";
import { AWAITING_APPROVAL, TOOL_STATES } from "./render.js";

/** The nested card of call row `row`, if drawn. */
function cardOf(row) {
  const next = row.nextElementSibling;
  return next?.classList.contains("child-card") && next.dataset.childOf === row.dataset.toolCallId ? next : null;
}

function callNode(call, awaiting) {
  let [mark, state] = TOOL_STATES[call.status] ?? ["•", "unknown"];
  if (state === "running" && awaiting.has(call.toolCallId)) state = "waiting";
  return el(
    "li",
    { className: "child-call", "data-child-call-id": call.toolCallId, "data-state": state },
    el("span", { className: "tool-mark", "aria-hidden": "true" }, mark),
    el("span", { className: "tool-name" }, call.tool ?? ""),
    el("span", { className: "tool-state" }, state === "waiting" ? AWAITING_APPROVAL : state),
    call.argumentsSummary ? el("span", { className: "tool-args" }, call.argumentsSummary) : null,
    call.resultSummary ? el("span", { className: "tool-result-summary" }, call.resultSummary) : null,
  );
}

function headline(view) {
  const total = Number(view.callsTotal ?? 0);
  const shown = (view.calls ?? []).length;
  const calls = `${total} tool call${total === 1 ? "" : "s"}`;
  return `Sub-agent: ${calls}${total > shown ? ` (latest ${shown} shown)` : ""}`;
}

/**
 * Draw (or redraw) the nested card of `row` from `view` (a ChildView); `awaiting` holds the
 * ids of calls whose approval waits for the person.
 */
export function showChild(row, view, awaiting = new Set()) {
  let card = cardOf(row);
  if (!card) {
    card = el("details", { className: "child-card", "data-child-of": row.dataset.toolCallId, open: true });
    row.after(card);
  }
  const calls = view.calls ?? [];
  card.dataset.childKey = view.conversationKey ?? "";
  card.replaceChildren(
    el("summary", {}, headline(view)),
    calls.length
      ? el("ul", { className: "child-calls", "aria-label": "The sub-agent's tool calls" }, ...calls.map((c) => callNode(c, awaiting)))
      : null,
    view.latestText ? el("p", { className: "child-text", dir: "auto" }, `› ${view.latestText}`) : null,
  );
  return card;
}

/** Mark (or unmark) call `callId` of any nested card in `log` as waiting for approval. */
export function markChildAwaiting(log, callId, waiting) {
  const node = log.querySelector(`.child-call[data-child-call-id="${CSS.escape(callId)}"]`);
  if (!node) return;
  if (waiting && node.dataset.state === "running") {
    node.dataset.state = "waiting";
    node.querySelector(".tool-state").textContent = AWAITING_APPROVAL;
  } else if (!waiting && node.dataset.state === "waiting") {
    node.dataset.state = "running";
    node.querySelector(".tool-state").textContent = "running";
  }
}
