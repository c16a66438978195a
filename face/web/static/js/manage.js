// Renaming and archiving the conversation shown, from the details panel. The Mind commits each
// change with a `conversation_changed` event; the page updates its list and header from that
// event (here and in every other tab), not from its own request.

import { el } from "./dom.js";

const MAX_TITLE = 200;

export class ConversationSettings {
  /** `elements`: {form, title, archive, error}; `app`: `call(method, body)`, `viewKey()`. */
  constructor(elements, app) {
    this.elements = elements;
    this.app = app;
    this.conversation = null;
    elements.form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      this.rename();
    });
    elements.archive.addEventListener("click", () => this.toggleArchived());
  }

  /** Another conversation is being opened: until it is shown, Archive waits (disabled) rather
   * than act on the one before or do nothing when pressed. */
  opening() {
    this.conversation = null;
    this.elements.archive.disabled = true;
  }

  /** The conversation shown (as the Mind last told it). */
  show(conversation) {
    const changedTitle = !this.conversation || this.conversation.key !== conversation.key || this.conversation.title !== conversation.title;
    this.conversation = conversation;
    const { title, archive } = this.elements;
    if (changedTitle && document.activeElement !== title) title.value = conversation.title ?? "";
    archive.textContent = conversation.archived ? "Unarchive" : "Archive";
    archive.setAttribute("aria-pressed", conversation.archived ? "true" : "false");
    archive.disabled = false;
    this.say("");
  }

  async rename() {
    const title = this.elements.title.value.trim();
    if (!title) return this.say("Give the conversation a name.");
    if (title.length > MAX_TITLE) return this.say(`A title is at most ${MAX_TITLE} characters.`);
    await this.attempt(() => this.app.call("renameConversation", { conversationKey: this.key(), title }));
  }

  async toggleArchived() {
    // Only once the settings show the conversation on screen: acting on what they showed of
    // the one before would archive or unarchive the wrong conversation.
    const shown = this.conversation;
    if (!shown || shown.key !== this.app.viewKey()) return;
    await this.attempt(() => this.app.call("archiveConversation", { conversationKey: shown.key, archived: !shown.archived }));
  }

  key() {
    return this.app.viewKey();
  }

  async attempt(change) {
    try {
      const reply = await change();
      if (reply.conversation) this.app.changed(reply.conversation);
      this.say("");
    } catch (failure) {
      this.say(failure.message);
    }
  }

  say(message) {
    const { error } = this.elements;
    error.replaceChildren(...(message ? [el("span", {}, message)] : []));
    error.hidden = !message;
  }
}
