// The web client's entry point: sign in (a pairing code typed in or opened as `#pair=CODE`),
// then one WebSocket to Face carries everything — the conversation list, the conversation
// shown, its events as they happen — until the person signs out or the credential is revoked.

import * as api from "./api.js";
import { PENDING } from "./approvals.js";
import { Composer } from "./composer.js";
import { Connection } from "./connection.js";
import { ConversationView, payloadOf } from "./conversation.js";
import { ConversationList } from "./conversations.js";
import { DetailsPanel } from "./details.js";
import { byId } from "./dom.js";
import { Pictures } from "./images.js";
import { ConversationSettings } from "./manage.js";
import { Notifier } from "./notifications.js";
import { WidgetViewer } from "./widgets.js";

const PAIR_FRAGMENT = "#pair=";
const CONVERSATION_FRAGMENT = "#conversation=";
// What the banner says while this page cannot reach the Face, or the Face cannot reach its Mind
// (the technical reason is its tooltip).
const FACE_DOWN = "Cannot reach ToBe. Reconnecting…";
const MIND_DOWN = "ToBe cannot reach its Mind. Reconnecting…";

class App {
  constructor() {
    this.connection = null;
    this.started = false;
    this.welcomes = 0;
    this.list = new ConversationList(byId("conversations"), this, (key, messageId) => this.open(key, messageId));
    this.notifier = new Notifier({ toggle: byId("notify-toggle"), hint: byId("notify-hint") }, (key) => this.open(key));
    this.view = new ConversationView(
      {
        scroller: byId("scroller"),
        log: byId("log"),
        live: byId("live"),
        pending: byId("pending"),
        newMessages: byId("new-messages"),
      },
      this,
      (running) => this.composer.setRunning(running),
    );
    this.composer = new Composer(
      {
        form: byId("composer"),
        text: byId("message"),
        send: byId("send"),
        cancel: byId("cancel"),
        attach: byId("attach"),
        files: byId("files"),
        attachments: byId("attachments"),
        error: byId("composer-error"),
        dropZones: [byId("composer"), byId("scroller")],
        replyPreview: byId("reply-preview"),
        cancelReply: byId("cancel-reply"),
      },
      {
        send: async ({ text, images, replyTo, idempotencyKey }) => {
          await this.call("sendChat", { conversationKey: this.view.key, text, images, replyTo, idempotencyKey });
          this.view.follower.toEnd(); // the person's own message: follow the reply to it
        },
        cancel: () => this.call("cancelRun", { conversationKey: this.view.key }),
      },
    );
    byId("log").addEventListener("reply", (reply) => this.composer.setReply(reply.detail));
    byId("log").addEventListener("branch", (branch) => this.branch(branch.detail.messageId));
    byId("branch-origin-open").addEventListener("click", () => {
      const origin = byId("branch-origin").dataset.key;
      if (origin) this.open(origin).catch((failure) => (byId("status-line").textContent = failure.message));
    });
    this.pictures = new Pictures(
      { log: byId("log"), dialog: byId("image-viewer") },
      { conversationKey: () => this.view.key, call: (method, body) => this.call(method, body) },
    );
    this.widgets = new WidgetViewer(
      { log: byId("log"), dialog: byId("widget-viewer") },
      { conversationKey: () => this.view.key, call: (method, body) => this.call(method, body) },
    );
    this.details = new DetailsPanel(
      {
        panel: byId("details"),
        toggle: byId("toggle-details"),
        close: byId("close-details"),
        profile: byId("profile-select"),
        profileSwitch: byId("profile-switch"),
        profileNote: byId("profile-note"),
        profileError: byId("profile-error"),
        memory: byId("memory-list"),
        memoryTotal: byId("memory-total"),
        memoryError: byId("memory-error"),
        usage: byId("usage-summary"),
        usageList: byId("usage-list"),
        usageError: byId("usage-error"),
        schedules: byId("schedule-list"),
        schedulesError: byId("schedules-error"),
      },
      this,
      (open) => {
        if (open) this.showList(false);
      },
    );
    this.settings = new ConversationSettings(
      { form: byId("rename-form"), title: byId("rename-title"), archive: byId("archive"), error: byId("rename-error") },
      { call: (method, body) => this.call(method, body), viewKey: () => this.view.key, changed: (c) => this.changed(c) },
    );
    byId("signin-form").addEventListener("submit", (submit) => {
      submit.preventDefault();
      this.signIn(byId("code").value);
    });
    byId("signout").addEventListener("click", () => this.signOut());
    byId("new-conversation").addEventListener("submit", (submit) => {
      submit.preventDefault();
      this.create();
    });
    byId("search").addEventListener("input", () => this.list.search(byId("search").value));
    byId("show-archived").addEventListener("change", () => this.list.setShowArchived(byId("show-archived").checked));
    byId("toggle-list").addEventListener("click", () => this.showList(!document.body.classList.contains("list-open")));
  }

  /** A Mind call on the current connection (see Connection.call). */
  call(method, body) {
    if (!this.connection) return Promise.reject(new Error("not connected"));
    return this.connection.call(method, body);
  }

  async boot() {
    // A pairing link opened in a tab that already shows the client changes only the fragment.
    window.addEventListener("hashchange", async () => {
      if (!(await this.pairFromAddress())) await this.openFromAddress();
    });
    if (await this.pairFromAddress()) return;
    try {
      const session = await api.currentSession();
      if (session) this.startChat(session);
      else this.showSignIn("");
    } catch (failure) {
      this.showSignIn(failure.message);
    }
  }

  /** The conversation a `#conversation=KEY` address names (links in replies elsewhere, such as
   * an approval told by the OpenAI-compatible endpoint), taken off the address; "" for none. */
  linkedConversation() {
    if (!location.hash.startsWith(CONVERSATION_FRAGMENT)) return "";
    const key = decodeURIComponent(location.hash.slice(CONVERSATION_FRAGMENT.length));
    history.replaceState(null, "", location.pathname + location.search);
    return key;
  }

  /** A `#conversation=KEY` link opened in a tab already showing the client: open it there. */
  async openFromAddress() {
    const key = this.linkedConversation();
    if (!key || !this.started) return;
    try {
      await this.open(key);
    } catch (failure) {
      byId("status-line").textContent = failure.message;
    }
  }

  /** Sign in with the code of a `#pair=CODE` address; whether the address had one. */
  async pairFromAddress() {
    if (!location.hash.startsWith(PAIR_FRAGMENT)) return false;
    const code = decodeURIComponent(location.hash.slice(PAIR_FRAGMENT.length));
    // The code is used once; it should not stay in the address bar or the history.
    history.replaceState(null, "", location.pathname + location.search);
    await this.signIn(code);
    return true;
  }

  async signIn(typed) {
    const code = normaliseCode(typed);
    if (!code) {
      this.showSignIn("Enter the pairing code, like ABCDE-12345.");
      return;
    }
    byId("signin-button").disabled = true;
    try {
      await api.pair(code, api.deviceName());
      const session = await api.currentSession();
      if (!session) throw new Error("Signed in, but the browser did not keep the session cookie.");
      byId("code").value = "";
      this.startChat(session);
    } catch (failure) {
      this.showSignIn(failure.message);
    } finally {
      byId("signin-button").disabled = false;
    }
  }

  async signOut() {
    try {
      await api.logout();
    } catch (failure) {
      byId("status-line").textContent = failure.message;
      return;
    }
    this.stopChat();
    this.showSignIn("You signed out.", { notice: true });
  }

  showSignIn(message, { notice = false } = {}) {
    const shown = byId("signin-message");
    shown.textContent = message;
    shown.hidden = !message;
    shown.className = notice ? "notice" : "error";
    showScreen("signin");
    byId("code").focus();
  }

  startChat(session) {
    this.stopChat();
    byId("principal").textContent = session.principal;
    showScreen("chat");
    this.setReady(false);
    const connection = new Connection({
      onWelcome: (welcome, reconnected) => this.welcomed(welcome, reconnected),
      onEvent: (event) => this.event(event),
      onDown: (reason) => {
        showBanner(FACE_DOWN, reason);
        this.view.interrupted();
      },
      onMindLink: (up, reason) => {
        if (up) hideBanner();
        else {
          showBanner(MIND_DOWN, reason);
          this.view.interrupted();
        }
      },
      onSignedOut: (reason) => {
        this.stopChat();
        this.showSignIn(`You were signed out (${reason}). Sign in again with a new pairing code.`);
      },
      onSnapshotRequired: () => this.startOver(),
      onCheckSession: async () => {
        try {
          return (await api.currentSession()) !== null;
        } catch {
          return true; // the server is down, not the session
        }
      },
    });
    this.connection = connection;
    this.started = false;
    connection.start();
  }

  stopChat() {
    this.started = false;
    this.details.setOpen(false);
    if (this.connection) this.connection.stop();
    this.connection = null;
    hideBanner();
  }

  async welcomed(welcome, reconnected) {
    hideBanner();
    byId("principal").textContent = welcome.principal ?? "";
    // Only the latest welcome starts the chat: one that came while an earlier start was still
    // waiting (the connection was made anew meanwhile) must not open its conversation later,
    // over the one the person has opened since.
    const welcomes = ++this.welcomes;
    const superseded = () => welcomes !== this.welcomes;
    try {
      if (reconnected && this.started) {
        await this.list.refresh();
        return;
      }
      await this.list.refresh();
      // A welcome after the connection was made anew keeps the conversation the person sees.
      const linked = this.started ? "" : this.linkedConversation();
      const key = (this.started && this.view.key) || linked || (await this.list.newestChatOrNew());
      if (superseded()) return;
      let snapshot;
      try {
        snapshot = await this.open(key);
      } catch (failure) {
        if (!linked) throw failure;
        // A link to a conversation this principal cannot open: say so, open the newest.
        snapshot = await this.open(await this.list.newestChatOrNew());
        byId("status-line").textContent = `The linked conversation could not be opened: ${failure.message}`;
      }
      if (superseded()) return;
      await this.connection.subscribe(snapshot.lastEventId ?? "0");
      if (superseded()) return;
      this.started = true;
      // Only now: a conversation made or a message sent before would race the first one shown.
      this.setReady(true);
    } catch (failure) {
      byId("status-line").textContent = failure.message;
    }
  }

  /** A resume came too late for the Mind: show the conversation anew and follow from there. */
  async startOver() {
    try {
      const snapshot = await this.view.open(this.view.key);
      this.details.show(this.view.key, snapshot);
      await this.connection.subscribe(snapshot.lastEventId ?? "0");
      await this.list.refresh();
    } catch (failure) {
      byId("status-line").textContent = failure.message;
    }
  }

  /** Show conversation `key`; at message `messageId` (a search's match) when given. */
  async open(key, messageId = "0") {
    this.list.select(key);
    this.settings.opening();
    this.showList(false);
    this.showTitle(key);
    this.composer.setRunning(false);
    this.composer.setReply(null); // a quote belongs to the conversation it was taken from
    const focused = document.activeElement;
    const snapshot = await this.view.open(key, messageId);
    if (this.view.key === key) this.details.show(key, snapshot);
    if (snapshot.conversation && this.view.key === key) this.changed(snapshot.conversation);
    // The composer takes the focus, unless the person moved it while the conversation loaded
    // (opened the details, started typing a search): their keys must not land in the message.
    const moved = document.activeElement !== focused && document.activeElement !== document.body;
    if (!this.details.isOpen && !moved) byId("message").focus();
    return snapshot;
  }

  /** A conversation as the Mind now has it: the list, and for the one shown its header and
   * settings, follow. */
  changed(conversation) {
    this.list.changed(conversation);
    if (conversation.key !== this.view.key) return;
    this.showTitle(conversation.key);
    this.showOrigin(conversation);
    this.settings.show(conversation);
  }

  /** Go on from message `messageId` of the conversation shown, in a new one (a branch). */
  async branch(messageId) {
    try {
      const reply = await this.call("branchConversation", { conversationKey: this.view.key, messageId });
      this.list.added(reply.conversation);
      await this.open(reply.conversation.key);
    } catch (failure) {
      byId("status-line").textContent = failure.message;
    }
  }

  /** Under the header, where a branch came from (a button that opens it); nothing otherwise. */
  showOrigin(conversation) {
    const line = byId("branch-origin");
    const origin = conversation.branchedFromKey ?? "";
    line.hidden = !origin;
    line.dataset.key = origin;
    byId("branch-origin-open").textContent = origin ? this.list.title(origin) : "";
    byId("branch-origin-at").textContent = origin ? `at message #${conversation.branchedFromMessageId}` : "";
  }

  /** The header names the conversation shown; a long title is cut short, whole on hover. */
  showTitle(key) {
    const heading = byId("conversation-title");
    heading.textContent = this.list.title(key);
    heading.title = heading.textContent;
  }

  async create() {
    const title = byId("new-title");
    try {
      const key = await this.list.create(title.value.trim());
      title.value = "";
      await this.open(key);
    } catch (failure) {
      byId("status-line").textContent = failure.message;
    }
  }

  event(event) {
    const [kind, payload] = payloadOf(event);
    if (kind === "conversationCreated") this.list.added(payload);
    if (kind === "conversationChanged") this.changed(payload);
    const key = event.conversationKey ?? "";
    if (!key) return;
    if (kind === "widgetChanged") this.widgets.changed(key, payload);
    this.tellIfHidden(key, kind, payload);
    if (key === this.view.key) {
      this.view.handle(event);
      this.details.handle(key, kind, payload, BigInt(event.durableId ?? 0));
      return;
    }
    if (kind === "messageAppended" && ["MESSAGE_ROLE_USER", "MESSAGE_ROLE_ASSISTANT"].includes(payload.role)) {
      this.list.activity(key);
    } else if (kind === "approvalChanged" && (payload.decision ?? PENDING) === PENDING) {
      this.list.activity(key, { approval: true });
    } else if (kind === "actionChanged" && payload.state === "PENDING_ACTION_STATE_PENDING") {
      this.list.activity(key, { approval: true });
    }
  }

  /** A reply, or something waiting for the person, while the tab is hidden: say so. */
  tellIfHidden(key, kind, payload) {
    const title = this.list.title(key);
    if (kind === "messageAppended" && payload.role === "MESSAGE_ROLE_ASSISTANT" && payload.widget) {
      this.notifier.happened(key, title, clip(`Sent a widget: ${payload.widget.title ?? ""}`));
    } else if (kind === "messageAppended" && payload.role === "MESSAGE_ROLE_ASSISTANT" && payload.text) {
      this.notifier.happened(key, title, clip(payload.text));
    } else if (kind === "approvalChanged" && (payload.decision ?? PENDING) === PENDING) {
      this.notifier.happened(key, title, `Waiting for your approval: ${payload.tool ?? "a tool call"}`);
    } else if (kind === "actionChanged" && payload.state === "PENDING_ACTION_STATE_PENDING") {
      this.notifier.happened(key, title, `Waiting for your confirmation: ${payload.title ?? ""}`);
    }
  }

  setReady(ready) {
    this.composer.setEnabled(ready);
    for (const control of byId("new-conversation").elements) control.disabled = !ready;
  }

  showList(open) {
    if (open) this.details.setOpen(false);
    document.body.classList.toggle("list-open", open);
    byId("toggle-list").setAttribute("aria-expanded", String(open));
  }
}

/** `abcde12345`, ` ABCDE-12345 ` → `ABCDE-12345`; anything else as typed (the server says why). */
function normaliseCode(typed) {
  const code = typed.trim().toUpperCase();
  const bare = code.replace(/[\s-]/g, "");
  return bare.length === 10 ? `${bare.slice(0, 5)}-${bare.slice(5)}` : code;
}

const NOTIFICATION_CHARS = 160;

function clip(text) {
  return text.length > NOTIFICATION_CHARS ? `${text.slice(0, NOTIFICATION_CHARS)}…` : text;
}

function showBanner(text, reason) {
  const banner = byId("banner");
  banner.textContent = text;
  banner.title = reason;
  banner.hidden = false;
}

function hideBanner() {
  byId("banner").hidden = true;
}

function showScreen(name) {
  for (const screen of ["loading", "signin", "chat"]) byId(screen).hidden = screen !== name;
}

// The app shell works offline once installed; the page works the same without it.
if ("serviceWorker" in navigator) navigator.serviceWorker.register("sw.js").catch(() => {});

new App().boot();
