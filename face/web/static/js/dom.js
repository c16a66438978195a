// Small DOM helpers: every element is built with textContent and properties, never from HTML
// strings, so nothing a model, a tool or another person wrote can become markup by accident.

/**
 * An element: `el("button", {className: "x", type: "button", onclick}, "text", child)`.
 * Keys starting with `data-` or `aria-` (or `role`, `for`) become attributes; the rest are
 * properties. Children are nodes or strings (as text); null and false are skipped.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("data-") || key.startsWith("aria-") || key === "role" || key === "for") {
      node.setAttribute(key, String(value));
    } else {
      node[key] = value;
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function byId(id) {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`#${id} is missing from index.html`);
  return node;
}

/** Random hex of `bytes` bytes (idempotency keys, conversation keys, request ids). */
export function randomHex(bytes) {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}
