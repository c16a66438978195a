// Pictures: an image brought within the size rule before it is sent, the pictures of the
// transcript fetched by digest, and the larger view.
//
// The rule is the Mind's (mind.conversation.image_limits): longest side at most 2048 px and at
// most 5 MiB. An image already within it and of a type every model reads (PNG, JPEG, WebP,
// GIF) is sent as it is; any other image the browser can decode is drawn on a canvas and sent
// as JPEG, the quality lowered and then the size until it fits. The Mind checks again.
//
// Messages carry only image references; `Pictures` fetches each image's bytes once with the
// Mind's GetImage (one image per frame, so frames stay bounded), shows them as blob: URLs (the
// CSP's img-src allows blob:) and opens the larger view on click.

import { el } from "./dom.js";

export const MAX_SIDE = 2048;
export const MAX_BYTES = 5 * 1024 * 1024;
const SENDABLE = ["image/png", "image/jpeg", "image/webp", "image/gif"];
const QUALITIES = [0.9, 0.82, 0.74, 0.66, 0.58, 0.5];
const SHRINK = 0.75;
const CACHED = 200;

function jpegOf(canvas, quality) {
  return new Promise((done, failed) =>
    canvas.toBlob((blob) => (blob ? done(blob) : failed(new Error("the image could not be encoded"))), "image/jpeg", quality),
  );
}

/** `file` within the rule: {blob, mediaType}; throws when the browser cannot decode it. */
export async function fitImage(file) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    throw new Error(`${file.name || "The pasted file"} is not an image this browser can read.`);
  }
  try {
    const { width, height } = bitmap;
    if (Math.max(width, height) <= MAX_SIDE && file.size <= MAX_BYTES && SENDABLE.includes(file.type)) {
      return { blob: file, mediaType: file.type };
    }
    let scale = Math.min(1, MAX_SIDE / Math.max(width, height));
    for (;;) {
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, Math.round(width * scale));
      canvas.height = Math.max(1, Math.round(height * scale));
      const context = canvas.getContext("2d");
      context.fillStyle = "#fff"; // JPEG has no transparency: what was see-through shows white
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      for (const quality of QUALITIES) {
        const blob = await jpegOf(canvas, quality);
        if (blob.size <= MAX_BYTES) return { blob, mediaType: "image/jpeg" };
      }
      if (Math.max(canvas.width, canvas.height) <= 16) throw new Error("the image cannot be made small enough");
      scale *= SHRINK;
    }
  } finally {
    bitmap.close();
  }
}

function blobOf(base64, mediaType) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return new Blob([bytes], { type: mediaType });
}

/** The transcript's pictures: loaded as they appear in `log`, enlarged in `dialog` on click. */
export class Pictures {
  /** `conversationKey()`: the conversation shown; `call(method, body)`: a Mind call. */
  constructor({ log, dialog }, { conversationKey, call }) {
    this.dialog = dialog;
    this.conversationKey = conversationKey;
    this.call = call;
    this.urls = new Map(); // `${key}/${digest}` → Promise of a blob: URL
    this.opener = null;
    new MutationObserver((changes) => {
      for (const change of changes) {
        for (const node of change.addedNodes) {
          if (node.nodeType !== Node.ELEMENT_NODE) continue;
          for (const img of node.matches("img[data-digest]") ? [node] : node.querySelectorAll("img[data-digest]")) this.load(img);
        }
      }
    }).observe(log, { childList: true, subtree: true });
    log.addEventListener("click", (click) => {
      const picture = click.target.closest("button.picture");
      if (picture) this.enlarge(picture);
    });
    dialog.querySelector(".close").addEventListener("click", () => dialog.close());
    dialog.addEventListener("click", (click) => {
      if (click.target === dialog) dialog.close(); // the backdrop
    });
    dialog.addEventListener("close", () => {
      this.opener?.focus();
      this.opener = null;
    });
  }

  async load(img) {
    const key = this.conversationKey();
    try {
      img.src = await this.url(key, img.dataset.digest);
    } catch {
      img.closest(".picture")?.classList.add("unavailable");
    }
  }

  url(key, digest) {
    const id = `${key}/${digest}`;
    let found = this.urls.get(id);
    if (!found) {
      found = this.call("getImage", { conversationKey: key, digest }).then((reply) =>
        URL.createObjectURL(blobOf(reply.data ?? "", reply.mediaType ?? "")),
      );
      found.catch(() => this.urls.delete(id));
      this.urls.set(id, found);
      if (this.urls.size > CACHED) this.forget(this.urls.keys().next().value);
    }
    return found;
  }

  forget(id) {
    const old = this.urls.get(id);
    this.urls.delete(id);
    old?.then((url) => URL.revokeObjectURL(url)).catch(() => {});
  }

  enlarge(picture) {
    const img = picture.querySelector("img");
    if (!img?.src) return;
    const large = this.dialog.querySelector("img");
    large.src = img.src;
    large.alt = img.alt;
    this.dialog.querySelector(".caption").textContent = img.alt;
    this.opener = picture;
    this.dialog.showModal();
    this.dialog.querySelector(".close").focus();
  }
}

/** The pictures of a message: `who` says whose they are, for their alternative text. */
export function picturesNode(images, who) {
  if (!images?.length) return null;
  return el(
    "div",
    { className: "images" },
    images.map((image, index) => {
      const alt = images.length > 1 ? `image ${index + 1} of ${images.length} ${who}` : `image ${who}`;
      return el(
        "button",
        { type: "button", className: "picture", title: "Show larger" },
        el("img", { alt, "data-digest": image.digest, "data-media-type": image.mediaType ?? "", decoding: "async" }),
      );
    }),
  );
}
