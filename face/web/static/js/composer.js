// Writing a message: Enter sends, Shift+Enter starts a new line, Esc cancels the running
// reply. A message is sent once: the composer is locked from the first Enter or click until the
// send is acknowledged or fails, and the message keeps its idempotency key until it is
// acknowledged, so sending it again after a failure is the same send (the Mind keeps one).
// Images come from the file picker, the clipboard or a drop on the composer or the
// transcript; each is brought within the Mind's size rule here (`images.js`: at most 2048 px
// and 5 MiB, else a JPEG), at most 8 a message (the Mind's default), and shown as a thumbnail
// until sent. The Mind checks again. A Reply button in the transcript (`quotes.js`) makes the
// next message quote its message: the quote shows above the text with a cancel button until
// the message is sent with `replyTo`, or the reply is cancelled.

import { el, randomHex } from "./dom.js";
import { fitImage } from "./images.js";
import { quoteText } from "./quotes.js";
import { sizeText } from "./render.js";

const MAX_IMAGES = 8;

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export class Composer {
  /**
   * `elements`: {form, text, send, cancel, attach, files, attachments, error, dropZones,
   * replyPreview, cancelReply}; `send({text, images, replyTo, idempotencyKey})` and `cancel()`
   * return promises.
   */
  constructor(elements, { send, cancel }) {
    this.elements = elements;
    this.sendMessage = send;
    this.cancelRun = cancel;
    this.images = []; // {name, mediaType, data (base64), size, url (the thumbnail's)}
    this.running = false;
    this.enabled = false;
    this.sending = false;
    this.idempotencyKey = ""; // of the message being written; kept until it is acknowledged
    this.quote = null; // {messageId, speaker, text, hasImages} of the message replied to
    elements.cancelReply.addEventListener("click", () => {
      this.setReply(null);
      text.focus();
    });
    const { form, text, cancel: cancelButton, attach, files } = elements;
    form.addEventListener("submit", (submit) => {
      submit.preventDefault();
      this.submit();
    });
    text.addEventListener("keydown", (key) => {
      if (key.key === "Enter" && !key.shiftKey && !key.isComposing) {
        key.preventDefault();
        this.submit();
      }
    });
    // Esc stops the run only when nothing in front of the chat takes it: an open dialog (a
    // widget, a larger picture) or the details panel closes instead, and the run goes on.
    document.addEventListener("keydown", (key) => {
      if (key.key !== "Escape" || key.defaultPrevented || !this.running) return;
      if (document.querySelector("#chat[hidden], dialog:modal")) return;
      key.preventDefault();
      this.cancel();
    });
    cancelButton.addEventListener("click", () => this.cancel());
    attach.addEventListener("click", () => files.click());
    files.addEventListener("change", () => {
      this.add([...files.files]);
      files.value = "";
    });
    // Another message: a failed send of the earlier one is not retried under its key.
    text.addEventListener("input", () => {
      this.idempotencyKey = "";
    });
    text.addEventListener("paste", (paste) => {
      const pasted = [...(paste.clipboardData?.files ?? [])].filter((file) => file.type.startsWith("image/"));
      if (pasted.length) {
        paste.preventDefault();
        this.add(pasted);
      }
    });
    for (const zone of elements.dropZones ?? []) this.acceptDrops(zone);
  }

  /** Files dropped on `zone` are attached (only while the composer is enabled). */
  acceptDrops(zone) {
    const carriesFiles = (drag) => [...(drag.dataTransfer?.types ?? [])].includes("Files");
    zone.addEventListener("dragover", (drag) => {
      if (!carriesFiles(drag) || this.elements.attach.disabled) return;
      drag.preventDefault();
      drag.dataTransfer.dropEffect = "copy";
      zone.classList.add("dropping");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("dropping"));
    zone.addEventListener("drop", (drop) => {
      zone.classList.remove("dropping");
      if (!carriesFiles(drop) || this.elements.attach.disabled) return;
      drop.preventDefault();
      this.add([...drop.dataTransfer.files]);
    });
  }

  /** Quote `quote` in the next message (null: quote nothing); another message's key. */
  setReply(quote) {
    if (this.sending) return;
    this.quote = quote;
    this.idempotencyKey = "";
    const { replyPreview } = this.elements;
    replyPreview.querySelector(".quote").textContent = quote ? quoteText(quote) : "";
    replyPreview.hidden = !quote;
    if (quote) this.elements.text.focus();
  }

  setRunning(running) {
    this.running = running;
    this.elements.cancel.hidden = !running;
  }

  setEnabled(enabled) {
    this.enabled = enabled;
    this.lock(this.sending);
  }

  /** While a send is in flight nothing can be sent or changed; the text stays focusable. */
  lock(sending) {
    this.sending = sending;
    const { form, text, send, attach } = this.elements;
    text.disabled = !this.enabled;
    text.readOnly = sending;
    send.disabled = attach.disabled = !this.enabled || sending;
    form.setAttribute("aria-busy", String(sending));
  }

  error(message) {
    this.elements.error.textContent = message;
    this.elements.error.hidden = !message;
  }

  async add(files) {
    this.error("");
    for (const file of files) {
      if (!file.type.startsWith("image/")) {
        this.error(`${file.name || "The pasted file"} is not an image.`);
        continue;
      }
      if (this.images.length >= MAX_IMAGES) {
        this.error(`A message carries at most ${MAX_IMAGES} images.`);
        break;
      }
      try {
        const { blob, mediaType } = await fitImage(file);
        const name = file.name || "pasted image";
        const url = URL.createObjectURL(blob);
        this.idempotencyKey = "";
        this.images.push({ name, mediaType, data: base64(await blob.arrayBuffer()), size: blob.size, url });
      } catch (failure) {
        this.error(failure.message);
      }
    }
    this.drawAttachments();
  }

  clearImages() {
    for (const image of this.images) URL.revokeObjectURL(image.url);
    this.images = [];
  }

  drawAttachments() {
    const chips = this.images.map((image, index) =>
      el(
        "li",
        { className: "image-chip" },
        el("img", { className: "thumbnail", src: image.url, alt: image.name }),
        `${image.name}, ${sizeText(image.size)}`,
        el("button", {
          type: "button",
          className: "remove",
          textContent: "×",
          "aria-label": `Remove ${image.name}`,
          onclick: () => {
            this.idempotencyKey = "";
            URL.revokeObjectURL(image.url);
            this.images.splice(index, 1);
            this.drawAttachments();
          },
        }),
      ),
    );
    this.elements.attachments.replaceChildren(...chips);
    this.elements.attachments.hidden = chips.length === 0;
  }

  async submit() {
    if (this.sending || !this.enabled) return;
    const text = this.elements.text.value.trim();
    if (!text && this.images.length === 0) return;
    const images = this.images.map(({ mediaType, data }) => ({ mediaType, data }));
    const replyTo = this.quote?.messageId; // undefined: not in the frame
    this.idempotencyKey ||= `web-${randomHex(12)}`;
    this.error("");
    this.lock(true);
    try {
      await this.sendMessage({ text, images, replyTo, idempotencyKey: this.idempotencyKey });
      this.idempotencyKey = "";
      this.quote = null;
      this.elements.replyPreview.hidden = true;
      this.elements.text.value = "";
      this.clearImages();
      this.drawAttachments();
    } catch (failure) {
      this.error(failure.message);
    } finally {
      this.lock(false);
      this.elements.text.focus();
    }
  }

  async cancel() {
    try {
      await this.cancelRun();
    } catch (failure) {
      this.error(failure.message);
    }
  }
}
