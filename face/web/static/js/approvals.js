// Approval prompts: what the person decides on (the tool's decision text, shown in every
// detail mode), what started the run, and three answers — Approve once, Approve for this
// conversation, Deny. Once decided, here or elsewhere (another tab, the terminal), the buttons
// are disabled and the outcome is shown.

import { append, el } from "./dom.js";
import { handNameOf } from "./render.js";

export const PENDING = "APPROVAL_DECISION_UNSPECIFIED";
const OUTCOMES = {
  APPROVAL_DECISION_UNSPECIFIED: "Waiting for your decision",
  APPROVAL_DECISION_APPROVE_ONCE: "Approved once",
  APPROVAL_DECISION_APPROVE_CONVERSATION: "Approved for this conversation",
  APPROVAL_DECISION_DENY: "Denied",
  APPROVAL_DECISION_EXPIRED: "Expired (denied)",
};
const ANSWERS = [
  ["APPROVAL_DECISION_APPROVE_ONCE", "Approve once", "approve"],
  ["APPROVAL_DECISION_APPROVE_CONVERSATION", "Approve for this conversation", "approve"],
  ["APPROVAL_DECISION_DENY", "Deny", "deny"],
];

function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

function decidedOn(approval) {
  if (approval.decisionText) return approval.decisionText;
  if (approval.argumentsJson) return prettyJson(approval.argumentsJson);
  return approval.argumentsSummary ?? "";
}

/**
 * An approval card. `decide(approval, decision)` sends the decision and resolves with the
 * decided approval (or rejects with the reason it was refused).
 */
export function approvalNode(approval, decide) {
  const node = el("section", {
    className: "approval",
    "data-approval-id": approval.id,
    role: "group",
    "aria-label": `Approval for ${approval.tool}`,
  });
  const outcome = el("p", { className: "approval-outcome", role: "status" });
  const error = el("p", { className: "approval-error", role: "alert", hidden: true });
  const buttons = ANSWERS.map(([decision, label, kind]) =>
    el("button", {
      type: "button",
      className: `answer ${kind}`,
      textContent: label,
      onclick: async () => {
        setBusy(node, true);
        error.hidden = true;
        try {
          updateApproval(node, await decide(approval, decision));
        } catch (failure) {
          error.textContent = failure.message;
          error.hidden = false;
          if (node.dataset.decision === PENDING) setBusy(node, false);
        }
      },
    }),
  );
  append(node, [
    el(
      "h3",
      {},
      "Approval needed: ",
      el("span", { className: "approval-tool" }, approval.tool ?? ""),
      approval.handId ? ` on ${handNameOf(approval.tool, approval.handId)}` : "",
    ),
    el("pre", { className: "decision-text" }, decidedOn(approval)),
    approval.delegateCallId
      ? el("p", { className: "delegated" }, "Asked by a sub-agent this conversation started")
      : null,
    approval.origin ? el("p", { className: "origin" }, `Asked by a run started by ${approval.origin}`) : null,
    approval.reason ? el("p", { className: "reason", dir: "auto" }, approval.reason) : null,
    el("div", { className: "answers" }, buttons),
    outcome,
    error,
  ]);
  updateApproval(node, approval);
  return node;
}

function setBusy(node, busy) {
  for (const button of node.querySelectorAll("button.answer")) button.disabled = busy;
}

export function outcomeOf(approval) {
  return OUTCOMES[approval.decision ?? PENDING] ?? "Decided";
}

/** Show the approval's current decision; a decided one can no longer be answered. */
export function updateApproval(node, approval) {
  const decision = approval.decision ?? PENDING;
  node.dataset.decision = decision;
  node.querySelector(".approval-outcome").textContent = outcomeOf(approval);
  setBusy(node, decision !== PENDING);
  node.classList.toggle("decided", decision !== PENDING);
}
