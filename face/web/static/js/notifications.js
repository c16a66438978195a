// Telling the person what happened while the tab was hidden: a count in the tab's title, and,
// once they opt in (the switch in the list asks the browser's permission then, never before),
// a system notification for each reply and each approval or confirmation waiting for them.
// Clicking one brings the tab forward on that conversation. Notifications need the tab open
// (Web Push, which would not, needs a push service: docs/web-client.md).

const OPT_IN_KEY = "tobe.notifications";
const BLOCKED = "Notifications are blocked for this site; allow them in the browser's site settings.";
const UNSUPPORTED = "This browser cannot show notifications.";

export class Notifier {
  /** `elements`: {toggle (a checkbox), hint}; `onOpen(key)` shows a conversation. */
  constructor(elements, onOpen) {
    this.elements = elements;
    this.onOpen = onOpen;
    this.unread = 0;
    this.baseTitle = document.title;
    this.optedIn = readOptIn();
    elements.toggle.checked = this.enabled();
    elements.toggle.addEventListener("change", () => this.toggled());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.seen();
    });
  }

  enabled() {
    return "Notification" in window && Notification.permission === "granted" && this.optedIn;
  }

  async toggled() {
    const { toggle } = this.elements;
    this.hint("");
    if (!toggle.checked) {
      this.optIn(false);
      return;
    }
    if (!("Notification" in window)) {
      toggle.checked = false;
      this.hint(UNSUPPORTED);
      return;
    }
    const permission = Notification.permission === "default" ? await Notification.requestPermission() : Notification.permission;
    const granted = permission === "granted";
    toggle.checked = granted;
    this.optIn(granted);
    if (!granted) this.hint(BLOCKED);
  }

  optIn(on) {
    this.optedIn = on;
    writeOptIn(on);
  }

  hint(text) {
    this.elements.hint.textContent = text;
    this.elements.hint.hidden = !text;
  }

  /** Something for the person happened in conversation `key` (titled `title`). */
  happened(key, title, body) {
    if (document.visibilityState !== "hidden") return;
    this.unread += 1;
    document.title = `(${this.unread}) ${this.baseTitle}`;
    if (!this.enabled()) return;
    const shown = new Notification(title, { body, tag: `tobe-${key}` });
    shown.onclick = () => {
      window.focus();
      this.onOpen(key);
      shown.close();
    };
  }

  /** The tab is shown again: what happened is in view. */
  seen() {
    this.unread = 0;
    document.title = this.baseTitle;
  }
}

function readOptIn() {
  try {
    return localStorage.getItem(OPT_IN_KEY) === "on";
  } catch {
    return false;
  }
}

function writeOptIn(on) {
  try {
    localStorage.setItem(OPT_IN_KEY, on ? "on" : "off");
  } catch {
    // Storage is off: the switch holds for this page only.
  }
}
