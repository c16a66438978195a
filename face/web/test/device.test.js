// The browser's device id: made once, kept in its storage, sent with every pairing, so pairing
// the same browser again replaces its earlier session.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { deviceId } from "../static/js/api.js";

class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
}

beforeEach(() => {
  globalThis.localStorage = new MemoryStorage();
});

test("a browser keeps the same device id across pairings", () => {
  const first = deviceId();
  assert.match(first, /^[0-9a-f]{32}$/);
  assert.equal(deviceId(), first);
  assert.equal(localStorage.getItem("tobe.device_id"), first);
});

test("two browsers get different device ids", () => {
  const one = deviceId();
  globalThis.localStorage = new MemoryStorage();
  assert.notEqual(deviceId(), one);
});

test("a stored id the server would refuse is replaced", () => {
  localStorage.setItem("tobe.device_id", "not valid!");
  assert.match(deviceId(), /^[0-9a-f]{32}$/);
});

test("without storage the browser pairs with no device id", () => {
  globalThis.localStorage = {
    getItem() {
      throw new Error("storage is disabled");
    },
  };
  assert.equal(deviceId(), "");
});
