// What streams in while a reply runs, below the durable messages. Streamed text stands in for
// its step's message until that durable message arrives; then it is dropped and the message is
// shown, once, whatever order the ephemeral deltas and the durable events arrive in (as in
// `tobe chat`). Deltas are kept per step, because the next step's text may stream in before the
// previous step's last durable event. After a reconnect the deltas missed meanwhile are gone:
// the steps that were streaming keep what they had and wait for their durable message.

import { el } from "./dom.js";
import { fillMarkdown } from "./render.js";

export class LiveText {
  constructor(container) {
    this.container = container;
    // step -> {text, thinking, frozen, node}
    this.steps = new Map();
    this.pending = false;
  }

  stream(step, text, thinking) {
    let streamed = this.steps.get(step);
    if (!streamed) {
      streamed = { text: "", thinking: "", frozen: false, node: null };
      this.steps.set(step, streamed);
    }
    if (streamed.frozen) return;
    if (thinking) streamed.thinking += text;
    else streamed.text += text;
    this.draw();
  }

  /** The step whose streamed text is `text` (a message tells no step of its own). */
  streamedStep(text) {
    const wanted = text.trim();
    if (!wanted) return null;
    const found = [...this.steps].filter(([, s]) => s.text.trim() === wanted).map(([step]) => step);
    return found.length ? Math.min(...found) : null;
  }

  /** Forget what streamed up to `step`: its durable message is shown instead. */
  dropThrough(step) {
    for (const [number, streamed] of this.steps) {
      if (number <= step) {
        streamed.node?.remove();
        this.steps.delete(number);
      }
    }
  }

  /** The run ended: clear, returning the text no durable message replaced. */
  finish() {
    const leftover = [...this.steps]
      .sort(([a], [b]) => a - b)
      .map(([, s]) => s.text)
      .join("");
    this.clear();
    return leftover;
  }

  clear() {
    this.steps.clear();
    this.container.replaceChildren();
  }

  /** The connection dropped: what streams later misses a middle part, so it is not added. */
  freeze() {
    for (const streamed of this.steps.values()) {
      streamed.frozen = true;
      streamed.node?.classList.add("interrupted");
    }
  }

  draw() {
    if (this.pending) return;
    this.pending = true;
    // Markdown is rendered again at most once a frame, however many deltas arrive.
    requestAnimationFrame(() => {
      this.pending = false;
      for (const [step, streamed] of [...this.steps].sort(([a], [b]) => a - b)) {
        if (!streamed.node) {
          streamed.node = el(
            "article",
            { className: "msg assistant streaming", "data-step": step, "aria-busy": "true" },
            el("p", { className: "thinking-live", dir: "auto", hidden: true }),
            el("div", { className: "md", dir: "auto" }),
          );
          this.container.append(streamed.node);
        }
        const thinking = streamed.node.querySelector(".thinking-live");
        thinking.textContent = streamed.thinking;
        thinking.hidden = !streamed.thinking;
        fillMarkdown(streamed.node.querySelector(".md"), streamed.text);
      }
    });
  }
}
