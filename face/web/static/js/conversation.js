// The conversation shown: its snapshot, then its events as they come. A snapshot says up to
// which durable event it is complete (`lastEventId`); durable events of this conversation at or
// below it are already in it and are not shown again. Events that arrive while the snapshot is
// being taken wait and are applied after it.

import { approvalNode, outcomeOf, PENDING, updateApproval } from "./approvals.js";
import { markChildAwaiting, showChild } from "./children.js";
import { el } from "./dom.js";
import { Follower } from "./follow.js";
import { LiveText } from "./live.js";
import {
  fillMarkdown,
  markAwaitingApproval,
  messageNode,
  showToolProgress,
  statusNode,
  toolNode,
  toolNodeFromCall,
  updateTool,
} from "./render.js";

const TERMINAL_RUN_STATES = new Set(["RUN_STATE_COMPLETED", "RUN_STATE_FAILED", "RUN_STATE_CANCELLED", "RUN_STATE_INTERRUPTED"]);
// What starts a proactive run (a scheduled action's firing): its steps are not a reply.
const PROACTIVE_TRIGGER = "schedule";
const RUN_STEPS = new Set(["messageAppended", "toolChanged", "textDelta", "thinkingDelta", "toolProgress"]);
const PAYLOADS = [
  "messageAppended", "runChanged", "toolChanged", "approvalChanged", "conversationCreated",
  "credentialRevoked", "messageQueued", "contextCompacted", "memoryChanged", "conversationChanged",
  "actionChanged", "scheduleChanged", "widgetChanged", "textDelta", "thinkingDelta", "toolProgress",
];
// The most messages a snapshot holds: asked for when a search's match is older than the
// latest ones a snapshot shows by default.
const MAX_SNAPSHOT_MESSAGES = 500;
const COMPACTION_REASONS = {
  COMPACTION_TRIGGER_BUDGET: " (context budget reached)",
  COMPACTION_TRIGGER_OVERFLOW: " (the model's context window overflowed)",
};
const ACTION_STATES = {
  PENDING_ACTION_STATE_CONFIRMED: "confirmed",
  PENDING_ACTION_STATE_CANCELLED: "declined",
  PENDING_ACTION_STATE_AMENDED: "amended",
  PENDING_ACTION_STATE_EXPIRED: "expired",
};

export function payloadOf(event) {
  const kind = PAYLOADS.find((name) => name in event);
  return kind ? [kind, event[kind]] : [null, null];
}

export class ConversationView {
  /**
   * `elements`: {scroller, log, live, pending, newMessages}; `connection`: the Connection;
   * `onRunning(bool)`: whether a run of this conversation is active.
   */
  constructor(elements, connection, onRunning) {
    this.elements = elements;
    this.connection = connection;
    this.onRunning = onRunning;
    this.key = "";
    this.base = 0n;
    this.waiting = null; // events held while a snapshot is taken
    this.live = new LiveText(elements.live);
    this.follower = new Follower(elements.scroller, elements.newMessages);
    this.resetRuns();
  }

  resetRuns() {
    this.endedRuns = new Set();
    this.finishedSteps = new Map();
    this.proactive = new Set();
    this.activeRun = "";
    this.awaiting = new Set(); // tool calls whose approval waits for the person
    this.reported = new Set(); // "<action id> <state>": outcome lines already shown
  }

  /** Show conversation `key` from a fresh snapshot; with `messageId` (not "0"), scrolled to
   * that message and marked as found, the snapshot reaching back to it if it can. */
  async open(key, messageId = "0") {
    this.key = key;
    this.waiting = [];
    this.elements.log.setAttribute("aria-busy", "true");
    try {
      let snapshot = await this.connection.call("getSnapshot", { conversationKey: key });
      if (this.key !== key) return snapshot;
      if (messageId !== "0" && !this.holds(snapshot, messageId)) {
        this.waiting = [];
        snapshot = await this.connection.call("getSnapshot", { conversationKey: key, messageLimit: MAX_SNAPSHOT_MESSAGES });
        if (this.key !== key) return snapshot;
      }
      this.show(snapshot);
      if (messageId !== "0") this.reveal(messageId);
      return snapshot;
    } finally {
      if (this.key === key) this.elements.log.removeAttribute("aria-busy");
    }
  }

  /** Whether the snapshot's messages reach back to message `messageId`. */
  holds(snapshot, messageId) {
    const first = (snapshot.messages ?? [])[0];
    return first !== undefined && BigInt(first.id ?? 0) <= BigInt(messageId);
  }

  /** Scroll to the message `messageId` (or, for one without an element of its own such as a
   * tool result, the last shown before it) and mark it found until the next snapshot. */
  reveal(messageId) {
    const wanted = BigInt(messageId);
    const shown = [...this.elements.log.querySelectorAll("[data-message-id]")];
    const node = shown.filter((item) => BigInt(item.dataset.messageId) <= wanted).pop();
    if (!node) return;
    node.classList.add("found");
    node.setAttribute("aria-current", "true");
    this.follower.reveal(node, "center");
  }

  show(snapshot) {
    const { log, pending } = this.elements;
    log.replaceChildren();
    pending.replaceChildren();
    this.live.clear();
    this.resetRuns();
    this.base = BigInt(snapshot.lastEventId ?? 0);
    const messages = snapshot.messages ?? [];
    const projections = new Map((snapshot.tools ?? []).map((tool) => [tool.toolCallId, tool]));
    const answers = new Map(messages.filter((m) => m.role === "MESSAGE_ROLE_TOOL").map((m) => [m.toolCallId, m]));
    for (const message of messages) {
      const node = messageNode(message, { toolName: projections.get(message.toolCallId)?.tool });
      if (node) log.append(node);
      for (const call of message.toolCalls ?? []) {
        const projection = projections.get(call.id);
        log.append(projection ? toolNode(projection) : toolNodeFromCall(call, answers.get(call.id)));
      }
    }
    for (const child of snapshot.children ?? []) this.childShown(child);
    for (const approval of snapshot.pendingApprovals ?? []) this.approvalChanged(approval);
    for (const action of snapshot.pendingActions ?? []) this.actionChanged(action, { quiet: true });
    for (const queued of snapshot.queued ?? []) this.messageQueued(queued);
    this.setRunning(snapshot.activeRun?.state === "RUN_STATE_RUNNING" ? snapshot.activeRun.id : "");
    const held = this.waiting ?? [];
    this.waiting = null;
    for (const event of held) this.apply(event);
    this.follower.toEnd();
  }

  /** An event of this conversation (the app routes the others to the list). */
  handle(event) {
    if (this.waiting) this.waiting.push(event);
    else this.apply(event);
  }

  /** The connection dropped: streamed text now misses what was said meanwhile. */
  interrupted() {
    this.live.freeze();
  }

  apply(event) {
    const id = BigInt(event.durableId ?? 0);
    if (id > 0n && id <= this.base) return;
    const [kind, payload] = payloadOf(event);
    if (kind === null || this.ofProactiveRun(kind, payload)) return;
    const handler = this[kind];
    if (typeof handler !== "function") return;
    handler.call(this, payload);
  }

  ofProactiveRun(kind, payload) {
    if (kind === "runChanged") {
      if (payload.trigger !== PROACTIVE_TRIGGER) return false;
      if (TERMINAL_RUN_STATES.has(payload.state)) this.proactive.delete(payload.id);
      else this.proactive.add(payload.id);
      return true;
    }
    return RUN_STEPS.has(kind) && this.proactive.has(payload.runId ?? "");
  }

  // -- streaming ----------------------------------------------------------------------------

  stale(delta) {
    const run = delta.runId ?? "";
    return this.endedRuns.has(run) || (delta.step ?? 0) < (this.finishedSteps.get(run) ?? 0);
  }

  textDelta(delta) {
    if (!this.stale(delta)) this.live.stream(delta.step ?? 0, delta.text ?? "", false);
  }

  thinkingDelta(delta) {
    if (!this.stale(delta)) this.live.stream(delta.step ?? 0, delta.text ?? "", true);
  }

  toolProgress(progress) {
    const row = this.toolRow(progress.toolCallId);
    if (row) showToolProgress(row, progress);
    if (progress.child) this.childShown(progress.child);
  }

  /** A `delegate` call's child run, under the call's row (`children.js`). */
  childShown(child) {
    const row = this.toolRow(child.toolCallId);
    if (row) showChild(row, child, this.awaiting);
  }

  // -- durable events -------------------------------------------------------------------------

  messageAppended(message) {
    if (message.role === "MESSAGE_ROLE_ASSISTANT" && !message.postedBy) {
      const run = message.runId ?? "";
      const step = Math.max(this.finishedSteps.get(run) ?? 0, this.live.streamedStep(message.text ?? "") ?? 0);
      this.finishedSteps.set(run, step + 1);
      this.live.dropThrough(step);
    }
    const toolName = this.toolRow(message.toolCallId)?.querySelector(".tool-name")?.textContent;
    const node = messageNode(message, { toolName });
    if (node) this.elements.log.append(node);
  }

  toolChanged(projection) {
    let row = this.toolRow(projection.toolCallId);
    if (row) updateTool(row, projection);
    else row = this.elements.log.appendChild(toolNode(projection));
    if (this.awaiting.has(projection.toolCallId)) markAwaitingApproval(row, true);
  }

  runChanged(run) {
    if (!TERMINAL_RUN_STATES.has(run.state)) {
      this.setRunning(run.id);
      return;
    }
    this.endedRuns.add(run.id);
    const unsaid = this.live.finish();
    if (run.state !== "RUN_STATE_COMPLETED") {
      if (unsaid.trim()) {
        const body = el("div", { className: "md" });
        fillMarkdown(body, unsaid);
        this.elements.log.append(el("article", { className: "msg assistant unsaid" }, body));
      }
      const state = run.state.replace("RUN_STATE_", "").toLowerCase();
      this.elements.log.append(statusNode(run.reason ? `run ${state}: ${run.reason}` : `run ${state}`, "error"));
    }
    if (this.activeRun === run.id) this.setRunning("");
  }

  approvalChanged(approval) {
    const waiting = (approval.decision ?? PENDING) === PENDING;
    const card = this.elements.log.querySelector(`[data-approval-id="${CSS.escape(approval.id)}"]`);
    if (card) {
      updateApproval(card, approval);
    } else if (waiting) {
      const asked = approvalNode(approval, (shown, decision) => this.decide(shown, decision));
      this.elements.log.append(asked);
      this.follower.reveal(asked);
    } else {
      this.elements.log.append(statusNode(`approval ${approval.tool}: ${outcomeOf(approval)}`));
    }
    // A sub-agent's request marks the delegate card that started it.
    const call = approval.delegateCallId || (approval.toolCallId ?? "");
    if (waiting) this.awaiting.add(call);
    else this.awaiting.delete(call);
    const row = this.toolRow(call);
    if (row) markAwaitingApproval(row, waiting);
    if (approval.delegateCallId) {
      // ... and its own call in the card's nested list.
      if (waiting) this.awaiting.add(approval.toolCallId);
      else this.awaiting.delete(approval.toolCallId);
      markChildAwaiting(this.elements.log, approval.toolCallId ?? "", waiting);
    }
  }

  async decide(approval, decision) {
    const reply = await this.connection.call("decideApproval", { approvalId: approval.id, decision });
    return reply.approval ?? { ...approval, decision };
  }

  messageQueued(queued) {
    const how = queued.steer ? "steers the running reply" : "queued as a follow-up";
    this.elements.log.append(statusNode(`message ${how}: ${queued.text ?? ""}`));
  }

  contextCompacted(compaction) {
    const count = Number(compaction.messagesSummarised ?? 0);
    const reason = COMPACTION_REASONS[compaction.trigger] ?? "";
    this.elements.log.append(
      statusNode(
        `compacted${reason}: ${count} message${count === 1 ? "" : "s"} summarised (generation ${compaction.generation ?? 1}); ` +
          `context ~${compaction.tokensBefore ?? 0} → ~${compaction.tokensAfter ?? 0} tokens`,
      ),
    );
  }

  memoryChanged(change) {
    const what = change.deleted ? "forgot" : `remembered (${change.sizeBytes ?? 0} bytes)`;
    this.elements.log.append(statusNode(`memory ${change.key}: ${what}${change.runId ? "" : " by the owner"}`));
  }

  scheduleChanged(action) {
    const state = (action.state ?? "SCHEDULE_STATE_UNSPECIFIED").replace("SCHEDULE_STATE_", "").toLowerCase();
    this.elements.log.append(statusNode(`schedule ${action.id} (${action.title ?? ""}): ${state}`));
  }

  actionChanged(action, { quiet = false } = {}) {
    const { pending } = this.elements;
    const existing = pending.querySelector(`[data-action-id="${CSS.escape(action.id)}"]`);
    if (action.state === "PENDING_ACTION_STATE_PENDING") {
      const card = this.actionCard(action);
      if (existing) existing.replaceWith(card);
      else pending.append(card);
    } else {
      existing?.remove();
      // The decision's reply and its event both say so: the line is shown once.
      const outcome = `${action.id} ${action.state}`;
      if (!quiet && !this.reported.has(outcome)) {
        this.reported.add(outcome);
        const then = action.outcome ? ` → ${action.outcome}` : "";
        this.elements.log.append(statusNode(`${ACTION_STATES[action.state] ?? "decided"}: ${action.title} [${action.id}]${then}`));
      }
    }
    pending.hidden = pending.childElementCount === 0;
    const asked = pending.querySelector(`[data-action-id="${CSS.escape(action.id)}"]`);
    if (asked && !existing) this.follower.reveal(asked);
  }

  actionCard(action) {
    const error = el("p", { className: "approval-error", role: "alert", hidden: true });
    const answer = (decision) => async (click) => {
      for (const button of click.target.parentElement.querySelectorAll("button")) button.disabled = true;
      try {
        const reply = await this.connection.call("decideAction", {
          actionId: action.id,
          decision,
          idempotencyKey: `${action.id}-${decision}`,
        });
        if (reply.action) this.actionChanged(reply.action);
      } catch (failure) {
        error.textContent = failure.message;
        error.hidden = false;
        for (const button of click.target.parentElement.querySelectorAll("button")) button.disabled = false;
      }
    };
    return el(
      "section",
      { className: "action", "data-action-id": action.id, role: "group", "aria-label": `Waiting for you: ${action.title}` },
      el("h3", {}, `Waiting for your confirmation: ${action.title ?? ""}`),
      action.reason ? el("p", { className: "reason", dir: "auto" }, action.reason) : null,
      el(
        "div",
        { className: "answers" },
        el("button", { type: "button", className: "answer approve", textContent: "Confirm", onclick: answer("ACTION_DECISION_CONFIRM") }),
        el("button", { type: "button", className: "answer deny", textContent: "Decline", onclick: answer("ACTION_DECISION_CANCEL") }),
      ),
      error,
    );
  }

  // -- helpers --------------------------------------------------------------------------------

  toolRow(callId) {
    return this.elements.log.querySelector(`[data-tool-call-id="${CSS.escape(callId ?? "")}"]`);
  }

  setRunning(runId) {
    this.activeRun = runId;
    this.onRunning(Boolean(runId));
  }

}
