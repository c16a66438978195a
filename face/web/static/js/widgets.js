// Widgets: a widget message's card in the transcript, and, opened, its type's page.
//
// The page is the operator's HTML and shows the person's data, so it runs boxed in: an
// <iframe sandbox="allow-scripts"> (an opaque origin: no cookies, no API, no way into this
// page) of `widget-frame.html`, which the Face serves with a CSP of its own (inline scripts and
// styles, no network; face/web/headers.py). Everything goes by postMessage (docs/widgets.md):
//   frame → app  {type: "tobe.widget.frame"}            the host is loaded: send the page
//   app → frame  {type: "tobe.widget.page", html}       the host replaces itself with it
//   page → app   {type: "tobe.widget.ready"}            the page listens: send the widget
//   app → page   {type: "tobe.widget", widget}          again whenever the widget changes
// Any other message, or one from another window, is ignored. A `widget_changed` event of the
// widget shown reads it again (Mind.GetWidget) and sends it to the page.

import { el } from "./dom.js";

const FRAME = "widget-frame.html";

/** A widget message's card: a button that opens the widget. The cover loads like any picture
 * of the transcript (`images.js` fills `img[data-digest]`). */
export function widgetCardNode(card) {
  return el(
    "button",
    { type: "button", className: "widget-card", "data-widget-id": card.id, title: "Open" },
    card.cover ? el("img", { className: "widget-cover", alt: "", "data-digest": card.cover, decoding: "async" }) : null,
    el(
      "span",
      { className: "widget-text" },
      el("span", { className: "widget-title", dir: "auto" }, card.title ?? ""),
      el("span", { className: "widget-type" }, card.type ?? ""),
      card.summary ? el("span", { className: "widget-summary", dir: "auto" }, card.summary) : null,
    ),
  );
}

/** The widget as a page gets it: modules by name, each record's data parsed. */
export function pageWidget(widget) {
  const modules = {};
  for (const module of widget.modules ?? []) {
    modules[module.name] = {
      description: module.description ?? "",
      records: (module.records ?? []).map((record) => ({
        id: record.recordId,
        data: JSON.parse(record.dataJson ?? "null"),
        revision: Number(record.revision ?? 0),
        updatedAt: record.updatedAt ?? "",
      })),
    };
  }
  return {
    id: widget.id,
    type: widget.type ?? "",
    typeVersion: Number(widget.typeVersion ?? 0),
    title: widget.title ?? "",
    summary: widget.summary ?? "",
    revision: Number(widget.revision ?? 0),
    updatedAt: widget.updatedAt ?? "",
    modules,
  };
}

/** The dialog that shows one widget's page at a time. */
export class WidgetViewer {
  /** `conversationKey()`: the conversation shown; `call(method, body)`: a Mind call. */
  constructor({ log, dialog }, { conversationKey, call }) {
    this.dialog = dialog;
    this.heading = dialog.querySelector(".widget-heading");
    this.error = dialog.querySelector(".error");
    this.body = dialog.querySelector(".widget-body");
    this.conversationKey = conversationKey;
    this.call = call;
    this.shown = null; // {key, id, widget, page, pageId}
    this.frame = null;
    this.ready = false;
    this.opener = null;
    log.addEventListener("click", (click) => {
      const card = click.target.closest("button.widget-card");
      if (card) this.open(card);
    });
    dialog.querySelector(".close").addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      this.frame?.remove();
      this.frame = null;
      this.shown = null;
      this.opener?.focus();
      this.opener = null;
    });
    window.addEventListener("message", (received) => this.received(received));
  }

  async open(card) {
    this.opener = card;
    this.shown = { key: this.conversationKey(), id: card.dataset.widgetId, widget: null, page: "", pageId: "" };
    this.heading.textContent = card.querySelector(".widget-title")?.textContent ?? "Widget";
    this.error.hidden = true;
    this.dialog.showModal();
    this.dialog.querySelector(".close").focus();
    await this.refresh();
  }

  /** Read the widget shown again and hand it to its page (a new page when its type changed). */
  async refresh() {
    const shown = this.shown;
    if (!shown) return;
    let reply;
    try {
      reply = await this.call("getWidget", { conversationKey: shown.key, widgetId: shown.id });
    } catch (failure) {
      if (this.shown !== shown) return;
      this.error.textContent = `The widget cannot be shown: ${failure.message}`;
      this.error.hidden = false;
      return;
    }
    if (this.shown !== shown) return;
    this.error.hidden = true;
    shown.widget = pageWidget(reply.widget ?? {});
    this.heading.textContent = shown.widget.title;
    const pageId = `${shown.widget.type}@${reply.pageVersion ?? 0}`;
    if (this.frame && shown.pageId === pageId) {
      this.post();
      return;
    }
    shown.page = reply.page ?? "";
    shown.pageId = pageId;
    this.mount(shown.widget.title);
  }

  mount(title) {
    this.frame?.remove();
    this.ready = false;
    const frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts"); // never allow-same-origin
    frame.className = "widget-frame";
    frame.title = `Widget: ${title}`;
    frame.src = FRAME;
    this.frame = frame;
    this.body.replaceChildren(frame);
  }

  received(received) {
    if (!this.frame || !this.shown || received.source !== this.frame.contentWindow) return;
    const type = received.data?.type;
    if (type === "tobe.widget.frame") {
      this.frame.contentWindow.postMessage({ type: "tobe.widget.page", html: this.shown.page }, "*");
    } else if (type === "tobe.widget.ready") {
      this.ready = true;
      this.post();
    }
  }

  post() {
    if (this.ready && this.frame && this.shown?.widget) {
      this.frame.contentWindow.postMessage({ type: "tobe.widget", widget: this.shown.widget }, "*");
    }
  }

  /** A `widget_changed` event of conversation `key`. */
  changed(key, change) {
    if (this.shown && this.shown.key === key && this.shown.id === change.widgetId) this.refresh();
  }
}
