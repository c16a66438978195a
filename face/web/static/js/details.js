// The conversation details panel: what the conversation shown runs with and keeps — its
// profile (switchable), its memory (each entry deletable after a confirm step), its
// scheduled actions (paused, resumed, deleted) — as `tobe chat`'s /profile, /memory, /forget,
// /schedules, /pause, /resume and /unschedule have them — and the tokens its model requests
// took, with their estimated cost (read again as each run ends). The lists are read afresh when the
// panel opens or shows another conversation, and follow the conversation's events after.
// Everything a model or a person wrote goes in as text.

import { el } from "./dom.js";
import { describeTrigger, localTime, mayFire, outcomeWord, stateWord } from "./schedules.js";

// Run states after which no more model requests of the run come.
const ENDED = new Set(["RUN_STATE_COMPLETED", "RUN_STATE_FAILED", "RUN_STATE_CANCELLED", "RUN_STATE_INTERRUPTED"]);
const NUMBER = new Intl.NumberFormat("en");

function count(value, noun) {
  const n = Number(value ?? 0);
  return `${NUMBER.format(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** "1,200 tokens in (200 cached) · 300 out (40 reasoning)" */
function tokenLine(totals) {
  const cached = Number(totals.cachedTokens ?? 0);
  const reasoning = Number(totals.reasoningTokens ?? 0);
  return (
    `${NUMBER.format(Number(totals.inputTokens ?? 0))} tokens in` +
    (cached ? ` (${NUMBER.format(cached)} cached)` : "") +
    ` · ${NUMBER.format(Number(totals.outputTokens ?? 0))} out` +
    (reasoning ? ` (${NUMBER.format(reasoning)} reasoning)` : "")
  );
}

/** The estimated cost, or why there is none: a model without a known price counts tokens only. */
function costText(totals, currency) {
  const unpriced = Number(totals.unpricedRequests ?? 0);
  if (unpriced === Number(totals.requests ?? 0)) return "cost unknown (no price for this model)";
  const cost = `about ${Number(totals.cost ?? 0).toFixed(4)} ${currency}`;
  return unpriced ? `${cost} (${count(unpriced, "request")} without a price)` : cost;
}

const CHANGES = {
  pause: "SCHEDULE_CHANGE_PAUSE",
  resume: "SCHEDULE_CHANGE_RESUME",
  delete: "SCHEDULE_CHANGE_DELETE",
};

export class DetailsPanel {
  /**
   * `elements`: {panel, toggle, close, profile, profileNote, profileError, memory, memoryTotal,
   * memoryError, usage, usageList, usageError, schedules, schedulesError}; `connection`: what sends commands;
   * `onOpen(open)`: the panel was opened or closed (the app closes the list meanwhile).
   */
  constructor(elements, connection, onOpen) {
    this.elements = elements;
    this.connection = connection;
    this.onOpen = onOpen;
    this.key = "";
    this.base = 0n; // the durable id the snapshot shown is complete up to
    this.conversation = null;
    this.profiles = [];
    this.schedules = new Map(); // id -> ScheduledAction, oldest first
    elements.toggle.addEventListener("click", () => this.setOpen(!this.isOpen));
    elements.close.addEventListener("click", () => this.setOpen(false));
    elements.panel.addEventListener("keydown", (key) => {
      if (key.key === "Escape") {
        key.preventDefault();
        this.setOpen(false);
      }
    });
    // Choosing only arms the button: arrow keys on a closed selector fire `change` per step.
    elements.profile.addEventListener("change", () => {
      elements.profileSwitch.disabled = elements.profile.value === this.currentProfile();
    });
    elements.profileSwitch.addEventListener("click", () => this.switchProfile(elements.profile.value));
  }

  get isOpen() {
    return !this.elements.panel.hidden;
  }

  setOpen(open) {
    if (open === this.isOpen) return;
    const { panel, toggle, close } = this.elements;
    const hadFocus = panel.contains(document.activeElement);
    panel.hidden = !open;
    document.body.classList.toggle("details-open", open);
    toggle.setAttribute("aria-expanded", String(open));
    this.onOpen(open);
    if (open) {
      close.focus();
      this.load();
    } else if (hadFocus) {
      toggle.focus();
    }
  }

  /** The conversation shown is now `key`, as of `snapshot`. */
  show(key, snapshot) {
    this.key = key;
    this.base = BigInt(snapshot.lastEventId ?? 0);
    this.conversation = snapshot.conversation ?? null;
    this.schedules = new Map((snapshot.scheduledActions ?? []).map((action) => [action.id, action]));
    this.elements.memory.replaceChildren();
    this.elements.memoryTotal.textContent = "";
    this.elements.usage.textContent = "";
    this.elements.usageList.replaceChildren();
    for (const error of ["profileError", "memoryError", "usageError", "schedulesError"]) this.elements[error].hidden = true;
    this.drawProfile();
    this.drawSchedules();
    if (this.isOpen) this.load();
  }

  /**
   * An event of conversation `key` (`kind` is its payload's name). Events the snapshot shown
   * already holds, and events of a conversation whose snapshot is still awaited, are skipped
   * (the lists are read afresh on opening).
   */
  handle(key, kind, payload, durableId) {
    if (key !== this.key || (durableId > 0n && durableId <= this.base)) return;
    if (kind === "conversationChanged") {
      this.conversation = payload;
      this.drawProfile();
    } else if (kind === "memoryChanged" && this.isOpen) {
      this.loadMemory(this.key);
    } else if (kind === "runChanged" && this.isOpen && ENDED.has(payload.state)) {
      this.loadUsage(this.key);
    } else if (kind === "scheduleChanged") {
      this.scheduleChanged(payload);
    }
  }

  /** Read the profiles, the memory and the scheduled actions afresh. */
  load() {
    const key = this.key;
    if (!key) return;
    this.loadProfiles();
    this.loadMemory(key);
    this.loadUsage(key);
    this.loadSchedules(key);
  }

  // -- profile --------------------------------------------------------------------------------

  async loadProfiles() {
    try {
      const reply = await this.connection.call("listProfiles", {});
      this.profiles = reply.profiles ?? [];
      this.drawProfile();
    } catch (failure) {
      showError(this.elements.profileError, `The profiles could not be read: ${failure.message}`);
    }
  }

  currentProfile() {
    const named = this.conversation?.profile ?? "";
    return named || (this.profiles.find((profile) => profile.isDefault)?.name ?? "");
  }

  drawProfile() {
    const { profile, profileNote } = this.elements;
    const current = this.currentProfile();
    const names = this.profiles.map((info) => info.name);
    if (current && !names.includes(current)) names.unshift(current);
    profile.replaceChildren(...names.map((name) => el("option", { value: name }, name)));
    profile.value = current;
    profile.disabled = names.length === 0;
    this.elements.profileSwitch.disabled = true;
    const info = this.profiles.find((candidate) => candidate.name === current);
    const tools = info?.platformTools?.length ? `platform tools: ${info.platformTools.join(", ")}` : "";
    profileNote.textContent = [info?.description ?? "", tools].filter(Boolean).join(" · ");
  }

  async switchProfile(name) {
    const { profile, profileSwitch, profileError } = this.elements;
    const key = this.key;
    profile.disabled = true;
    profileSwitch.disabled = true;
    profileError.hidden = true;
    try {
      const reply = await this.connection.call("setConversationProfile", { conversationKey: key, profile: name });
      if (this.key === key && reply.conversation) this.conversation = reply.conversation;
    } catch (failure) {
      if (this.key === key) showError(profileError, `The profile was not changed: ${failure.message}`);
    } finally {
      if (this.key === key) this.drawProfile();
    }
  }

  // -- memory ---------------------------------------------------------------------------------

  async loadMemory(key) {
    try {
      const reply = await this.connection.call("listMemory", { conversationKey: key });
      if (this.key === key) this.drawMemory(reply.entries ?? [], Number(reply.totalBytes ?? 0));
    } catch (failure) {
      if (this.key === key) showError(this.elements.memoryError, `The memory could not be read: ${failure.message}`);
    }
  }

  drawMemory(entries, totalBytes) {
    const { memory, memoryTotal, memoryError } = this.elements;
    memoryError.hidden = true;
    memory.replaceChildren(
      ...(entries.length ? entries.map((entry) => this.memoryItem(entry)) : [el("li", { className: "empty" }, "Nothing remembered")]),
    );
    const count = entries.length;
    memoryTotal.textContent = count ? `${count} entr${count === 1 ? "y" : "ies"}, ${totalBytes} bytes` : "";
  }

  memoryItem(entry) {
    const name = entry.key ?? "";
    const item = el(
      "li",
      { className: "entry", "data-memory-key": name },
      el(
        "div",
        { className: "entry-head" },
        el("strong", { className: "entry-key" }, name),
        entry.updatedAt ? el("span", { className: "hint" }, `written ${localTime(entry.updatedAt)}`) : null,
      ),
      el("p", { className: "entry-text", dir: "auto" }, entry.text ?? ""),
    );
    item.append(
      confirmingDelete(`Delete memory ${name}`, `Forget “${name}”?`, async () => {
        await this.connection.call("deleteMemory", { conversationKey: this.key, key: name });
        this.loadMemory(this.key);
      }, this.elements.memoryError),
    );
    return item;
  }

  // -- usage ----------------------------------------------------------------------------------

  async loadUsage(key) {
    try {
      const reply = await this.connection.call("getConversationUsage", { conversationKey: key });
      if (this.key === key) this.drawUsage(reply);
    } catch (failure) {
      if (this.key === key) showError(this.elements.usageError, `The usage could not be read: ${failure.message}`);
    }
  }

  drawUsage(reply) {
    const { usage, usageList, usageError } = this.elements;
    usageError.hidden = true;
    const total = reply.total ?? {};
    if (!Number(total.requests ?? 0)) {
      usage.textContent = "No model requests yet";
      usageList.replaceChildren();
      return;
    }
    usage.textContent = `${tokenLine(total)} · ${costText(total, reply.currency ?? "USD")}`;
    usageList.replaceChildren(
      ...(reply.byPurpose ?? []).map((group) =>
        el(
          "li",
          { className: "entry", "data-purpose": group.group ?? "" },
          el("strong", { className: "entry-key" }, group.group ?? ""),
          el("span", { className: "hint" }, ` ${count(group.requests, "request")}, ${tokenLine(group)}`),
        ),
      ),
    );
  }

  // -- scheduled actions ----------------------------------------------------------------------

  async loadSchedules(key) {
    try {
      const reply = await this.connection.call("listActions", { conversationKey: key });
      if (this.key !== key) return;
      this.schedules = new Map((reply.scheduled ?? []).filter(mayFire).map((action) => [action.id, action]));
      this.elements.schedulesError.hidden = true;
      this.drawSchedules();
    } catch (failure) {
      if (this.key === key) {
        showError(this.elements.schedulesError, `The scheduled actions could not be read: ${failure.message}`);
      }
    }
  }

  scheduleChanged(action) {
    if (mayFire(action)) this.schedules.set(action.id, action);
    else this.schedules.delete(action.id);
    this.drawSchedules();
  }

  drawSchedules() {
    const actions = [...this.schedules.values()];
    this.elements.schedules.replaceChildren(
      ...(actions.length ? actions.map((action) => this.scheduleItem(action)) : [el("li", { className: "empty" }, "Nothing scheduled")]),
    );
  }

  scheduleItem(action) {
    const state = stateWord(action.state);
    const outcome = outcomeWord(action);
    const title = action.title ?? "";
    const change = (name) => async () => {
      const reply = await this.connection.call("changeSchedule", { scheduleId: action.id, change: CHANGES[name] });
      if (reply.scheduled) this.scheduleChanged(reply.scheduled);
    };
    const error = this.elements.schedulesError;
    const toggle =
      state === "paused"
        ? actionButton("Resume", `Resume ${title}`, change("resume"), error)
        : actionButton("Pause", `Pause ${title}`, change("pause"), error);
    const controls = confirmingDelete(`Delete ${title}`, `Delete “${title}”?`, change("delete"), error, [toggle]);
    return el(
      "li",
      { className: "entry", "data-schedule-id": action.id, "data-state": state },
      el("div", { className: "entry-head" }, el("strong", {}, title), el("span", { className: "badge" }, state)),
      el("p", { className: "trigger" }, describeTrigger(action.trigger)),
      action.nextFireAt ? el("p", { className: "hint next" }, `next ${localTime(action.nextFireAt)}`) : null,
      outcome ? el("p", { className: "hint" }, `last ${outcome}`) : null,
      controls,
    );
  }
}

function showError(node, message) {
  node.textContent = message;
  node.hidden = false;
}

/** A button that runs `act`, disabled meanwhile; a failure is shown in `error`. */
function actionButton(text, label, act, error, className = "ghost") {
  const button = el("button", { type: "button", className, "aria-label": label }, text);
  button.addEventListener("click", async () => {
    button.disabled = true;
    error.hidden = true;
    try {
      await act();
    } catch (failure) {
      showError(error, failure.message);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/**
 * A Delete button that asks first: it turns into the question, "Yes, delete" (which runs
 * `act`) and "Keep"; `before` are other buttons shown beside it (hidden while it asks).
 */
function confirmingDelete(label, question, act, error, before = []) {
  const controls = el("div", { className: "entry-actions" });
  const ask = el("button", { type: "button", className: "deny", "aria-label": label }, "Delete");
  const confirm = el("div", { className: "confirm", role: "group", "aria-label": question, hidden: true });
  const keep = el("button", { type: "button", className: "ghost" }, "Keep");
  const back = () => {
    confirm.hidden = true;
    controls.hidden = false;
    ask.focus();
  };
  confirm.append(el("span", {}, question), actionButton("Yes, delete", "Yes, delete", act, error, "deny"), keep);
  keep.addEventListener("click", back);
  ask.addEventListener("click", () => {
    controls.hidden = true;
    confirm.hidden = false;
    keep.focus();
  });
  controls.append(...before, ask);
  return el("div", { className: "entry-controls" }, controls, confirm);
}
