// The conversation list and switcher. The person's newest own conversation (kind "chat")
// opens first, or a new one is made; conversations the platform made for observations are
// listed and can be opened, but never open by themselves (as in `tobe chat`). Activity in a
// conversation not shown marks it unread; one waiting for an approval is marked too.
// Archived conversations are listed only when the person asks to see them. The search box
// narrows the list to the titles containing what is typed at once, and adds the conversations
// the Mind finds with it in their messages (asked once typing pauses), each with a snippet;
// picking one of those opens its conversation at the message found.

import { el, randomHex } from "./dom.js";

const CHAT = "chat";
const LIST_LIMIT = 50;
// Typing pauses this long before the Mind is asked; shorter queries are matched by title only.
const SEARCH_PAUSE_MS = 300;
const MIN_TEXT_QUERY = 2;

export class ConversationList {
  /** `onOpen(key, messageId)` is called when the person picks a conversation (`messageId`: the
   * message a search found in it, "0" for none). */
  constructor(list, connection, onOpen) {
    this.list = list;
    this.connection = connection;
    this.onOpen = onOpen;
    this.conversations = new Map(); // key -> Conversation, newest first
    this.current = "";
    this.query = "";
    this.showArchived = false;
    this.known = new Map(); // key -> Conversation, listed or not (the header's title)
    this.found = new Map(); // key -> ConversationMatch the Mind found for `this.query`
    this.searchTimer = 0;
    this.searchSeq = 0;
  }

  /** Show the conversations whose title contains `query` (any case) at once, and those the Mind
   * finds with it in their messages once typing pauses. */
  search(query) {
    this.query = query.trim().toLocaleLowerCase();
    this.found = new Map();
    this.draw(this.unreadKeys());
    clearTimeout(this.searchTimer);
    const asked = ++this.searchSeq;
    if (this.query.length < MIN_TEXT_QUERY) return;
    this.searchTimer = setTimeout(() => this.searchMessages(query.trim(), asked), SEARCH_PAUSE_MS);
  }

  async searchMessages(query, asked) {
    let reply;
    try {
      reply = await this.connection.call("searchConversations", { query });
    } catch {
      return; // the title matches stay; the connection banner says why the Mind is not there
    }
    if (asked !== this.searchSeq) return; // the person typed on meanwhile
    this.found = new Map((reply.matches ?? []).map((match) => [match.conversation.key, match]));
    this.draw(this.unreadKeys());
  }

  /** List archived conversations too (or not), asking the Mind again. */
  async setShowArchived(show) {
    this.showArchived = show;
    await this.refresh();
  }

  async refresh() {
    const request = { limit: LIST_LIMIT, includeArchived: this.showArchived };
    const reply = await this.connection.call("listConversations", request);
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

  /** A conversation changed (renamed, archived, …): an archived one leaves the list unless
   * archived ones are shown; one brought back is listed again. */
  changed(conversation) {
    this.known.set(conversation.key, conversation);
    if (conversation.archived && !this.showArchived) this.conversations.delete(conversation.key);
    else if (this.conversations.has(conversation.key)) this.conversations.set(conversation.key, conversation);
    else this.conversations = new Map([[conversation.key, conversation], ...this.conversations]);
    const match = this.found.get(conversation.key);
    if (match) this.found.set(conversation.key, { ...match, conversation });
    this.draw(this.unreadKeys());
  }

  /** The conversation as this page last heard of it (undefined when unknown). */
  get(key) {
    return this.conversations.get(key) ?? this.known.get(key) ?? this.found.get(key)?.conversation;
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
    const conversation = this.get(key);
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
    const titled = [...this.conversations.values()].filter((conversation) =>
      (conversation.title || "Untitled conversation").toLocaleLowerCase().includes(this.query),
    );
    const shown = new Map(titled.map((conversation) => [conversation.key, { conversation, snippet: "", messageId: "0" }]));
    for (const [key, match] of this.found) {
      const found = { snippet: match.snippet ?? "", messageId: String(match.messageId ?? "0") };
      const entry = shown.get(key);
      if (entry) Object.assign(entry, found);
      else shown.set(key, { conversation: match.conversation, ...found });
    }
    const items = [...shown.values()].map(({ conversation, snippet, messageId }) => {
      const open = () => this.onOpen(conversation.key, snippet ? messageId : "0");
      const button = el(
        "button",
        { type: "button", className: "conversation", "data-key": conversation.key, onclick: open },
        el("span", { className: "conversation-title", dir: "auto" }, conversation.title || "Untitled conversation"),
        conversation.archived ? el("span", { className: "kind" }, "archived") : null,
        conversation.kind && conversation.kind !== CHAT ? el("span", { className: "kind" }, conversation.kind) : null,
        el("span", { className: "unread-mark", "aria-hidden": "true" }),
        snippet ? el("span", { className: "snippet", dir: "auto" }, snippet) : null,
      );
      if (marks.has(conversation.key)) button.dataset.unread = marks.get(conversation.key);
      if (conversation.key === this.current) button.setAttribute("aria-current", "true");
      this.label(button);
      return el("li", {}, button);
    });
    const none = this.query ? "No conversation has that in its title or messages" : "No conversations yet";
    this.list.replaceChildren(...(items.length ? items : [el("li", { className: "empty" }, none)]));
  }

  label(button) {
    const title = this.title(button.dataset.key);
    const state = { message: ", unread", approval: ", waiting for your approval" }[button.dataset.unread] ?? "";
    button.setAttribute("aria-label", `${title}${state}`);
    button.title = title;
  }
}
