// The conversation list and switcher. The person's newest own conversation (kind "chat")
// opens first, or a new one is made; conversations the platform made for observations are
// listed and can be opened, but never open by themselves (as in `tobe chat`). Activity in a
// conversation not shown marks it unread; one waiting for an approval is marked too.

import { el, randomHex } from "./dom.js";

const CHAT = "chat";
const LIST_LIMIT = 50;

export class ConversationList {
  /** `onOpen(key)` is called when the person picks a conversation. */
  constructor(list, connection, onOpen) {
    this.list = list;
    this.connection = connection;
    this.onOpen = onOpen;
    this.conversations = new Map(); // key -> Conversation, newest first
    this.current = "";
    this.query = "";
  }

  /** Show only the conversations whose title contains `query` (any case). */
  search(query) {
    this.query = query.trim().toLocaleLowerCase();
    this.draw(this.unreadKeys());
  }

  async refresh() {
    const reply = await this.connection.call("listConversations", { limit: LIST_LIMIT });
    const unread = this.unreadKeys();
    this.conversations = new Map((reply.conversations ?? []).map((c) => [c.key, c]));
    this.draw(unread);
  }

  /** The key of the newest conversation of kind "chat", made when there is none. */
  async newestChatOrNew() {
    const reply = await this.connection.call("listConversations", { limit: 1, kinds: [CHAT] });
    const newest = (reply.conversations ?? [])[0];
    return newest ? newest.key : this.create("");
  }

  async create(title) {
    const key = `p_${randomHex(6)}`;
    const reply = await this.connection.call("createConversation", { key, title });
    this.added(reply.conversation);
    return reply.conversation.key;
  }

  added(conversation) {
    if (this.conversations.has(conversation.key)) return;
    this.conversations = new Map([[conversation.key, conversation], ...this.conversations]);
    this.draw(this.unreadKeys());
  }

  changed(conversation) {
    if (!this.conversations.has(conversation.key)) return;
    this.conversations.set(conversation.key, conversation);
    this.draw(this.unreadKeys());
  }

  select(key) {
    this.current = key;
    this.markRead(key);
    for (const item of this.list.querySelectorAll("button[data-key]")) {
      if (item.dataset.key === key) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
    }
  }

  title(key) {
    const conversation = this.conversations.get(key);
    return conversation ? conversation.title || "Untitled conversation" : key;
  }

  /** Activity in `key`, not shown: mark it (and list it if it is new to us). */
  activity(key, { approval = false } = {}) {
    if (key === this.current) return;
    const item = this.list.querySelector(`button[data-key="${CSS.escape(key)}"]`);
    if (!item) return;
    item.dataset.unread = approval ? "approval" : item.dataset.unread || "message";
    this.label(item);
  }

  markRead(key) {
    const item = this.list.querySelector(`button[data-key="${CSS.escape(key)}"]`);
    if (item) {
      delete item.dataset.unread;
      this.label(item);
    }
  }

  unreadKeys() {
    return new Map([...this.list.querySelectorAll("[data-unread]")].map((n) => [n.dataset.key, n.dataset.unread]));
  }

  draw(unread) {
    const marks = unread instanceof Map ? unread : new Map([...unread].map((key) => [key, "message"]));
    const shown = [...this.conversations.values()].filter((conversation) =>
      (conversation.title || "Untitled conversation").toLocaleLowerCase().includes(this.query),
    );
    const items = shown.map((conversation) => {
      const button = el(
        "button",
        { type: "button", className: "conversation", "data-key": conversation.key, onclick: () => this.onOpen(conversation.key) },
        el("span", { className: "conversation-title", dir: "auto" }, conversation.title || "Untitled conversation"),
        conversation.kind && conversation.kind !== CHAT ? el("span", { className: "kind" }, conversation.kind) : null,
        el("span", { className: "unread-mark", "aria-hidden": "true" }),
      );
      if (marks.has(conversation.key)) button.dataset.unread = marks.get(conversation.key);
      if (conversation.key === this.current) button.setAttribute("aria-current", "true");
      this.label(button);
      return el("li", {}, button);
    });
    const none = this.query ? "No conversation has that in its title" : "No conversations yet";
    this.list.replaceChildren(...(items.length ? items : [el("li", { className: "empty" }, none)]));
  }

  label(button) {
    const title = this.title(button.dataset.key);
    const state = { message: ", unread", approval: ", waiting for your approval" }[button.dataset.unread] ?? "";
    button.setAttribute("aria-label", `${title}${state}`);
    button.title = title;
  }
}
