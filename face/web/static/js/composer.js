// Writing a message: Enter sends, Shift+Enter starts a new line, Esc cancels the running
// reply. A message is sent once: the composer is locked from the first Enter or click until the
// send is acknowledged or fails, and the message keeps its idempotency key until it is
// acknowledged, so sending it again after a failure is the same send (the Mind keeps one). Images come from the file picker or the clipboard; each is checked here against what
// the Mind accepts (PNG, JPEG, WebP or GIF, at most 5 MB each, at most 8 a message — its
// defaults), which saves sending megabytes only to be refused. The Mind checks again.

import { el, randomHex } from "./dom.js";
import { sizeText } from "./render.js";

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"];
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
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
   * `elements`: {form, text, send, cancel, attach, files, attachments, error};
   * `send({text, images, idempotencyKey})` and `cancel()` return promises.
   */
  constructor(elements, { send, cancel }) {
    this.elements = elements;
    this.sendMessage = send;
    this.cancelRun = cancel;
    this.images = []; // {name, mediaType, data (base64), size}
    this.running = false;
    this.enabled = false;
    this.sending = false;
    this.idempotencyKey = ""; // of the message being written; kept until it is acknowledged
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
    document.addEventListener("keydown", (key) => {
      if (key.key === "Escape" && this.running && !document.querySelector("#chat[hidden]")) {
        key.preventDefault();
        this.cancel();
      }
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
      if (!IMAGE_TYPES.includes(file.type)) {
        this.error(`${file.name || "The pasted file"} is not a PNG, JPEG, WebP or GIF image.`);
        continue;
      }
      if (file.size > MAX_IMAGE_BYTES) {
        this.error(`${file.name || "The pasted image"} is ${sizeText(file.size)}; images may be at most ${sizeText(MAX_IMAGE_BYTES)}.`);
        continue;
      }
      if (this.images.length >= MAX_IMAGES) {
        this.error(`A message carries at most ${MAX_IMAGES} images.`);
        break;
      }
      this.idempotencyKey = "";
      this.images.push({ name: file.name || "pasted image", mediaType: file.type, data: base64(await file.arrayBuffer()), size: file.size });
    }
    this.drawAttachments();
  }

  drawAttachments() {
    const chips = this.images.map((image, index) =>
      el(
        "li",
        { className: "image-chip" },
        `${image.name}, ${sizeText(image.size)}`,
        el("button", {
          type: "button",
          className: "remove",
          textContent: "×",
          "aria-label": `Remove ${image.name}`,
          onclick: () => {
            this.idempotencyKey = "";
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
    this.idempotencyKey ||= `web-${randomHex(12)}`;
    this.error("");
    this.lock(true);
    try {
      await this.sendMessage({ text, images, idempotencyKey: this.idempotencyKey });
      this.idempotencyKey = "";
      this.elements.text.value = "";
      this.images = [];
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
