// The WebSocket to Face: one `tobe.v1.ConnectRequest` / `ConnectResponse` per text frame, in
// protobuf's JSON mapping (lowerCamelCase names, int64 as strings, enums by name).
//
// What it keeps for the app: `hello` first; commands with request ids and their replies; every
// frame's `seq` checked gap-free per connection (a gap reconnects); the last durable event id
// processed, so that after any unexpected close it reconnects (0.5 s doubling to 5 s) with
// `hello{resumeAfterId}` and drops any durable event it already handled (no duplicates). A
// resume older than the Mind keeps answers "snapshot required": the app takes a snapshot and
// subscribes from it. Close code 4016 (UNAUTHENTICATED: signed out, revoked) ends it for good.
// A Mind call the Face could not pass on fails with a sentence for the person (the transport's
// own words stay in the error's `detail`), never with gRPC's text.
// Each command starts a trace of its own: its frame carries a W3C `traceparent` (a random trace
// id and span id, sampled) in `traceContext`, so the Face's span for it is that span's child.

import { randomHex } from "./dom.js";

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 5000;
// How Face's logs and status name this client.
const CLIENT_NAME = "tobe-web";
const UNAUTHENTICATED = 4016;
const NORMAL = 1000;
// A close this client asks for after a sequence gap (4000-4999 are the server's).
const GAP = 3000;
const SNAPSHOT_REQUIRED = "snapshot required";
// gRPC status codes that mean "the Mind could not be reached", not "the request was wrong".
const UNREACHABLE = new Set([4, 14]); // DEADLINE_EXCEEDED, UNAVAILABLE
const MIND_UNREACHABLE =
  "ToBe cannot reach its Mind right now, so this was not done. Try again once the banner at the top is gone.";

class CommandError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The error a person sees for a failed Mind call: a sentence of ours for an unreachable Mind. */
function humanError(error) {
  if (!(error instanceof CommandError) || !UNREACHABLE.has(error.code)) return error;
  const human = new CommandError(error.code, MIND_UNREACHABLE);
  human.detail = error.message;
  return human;
}

/** A W3C trace context header for a new trace: version 00, random ids, sampled (01). */
function newTraceparent() {
  return `00-${randomHex(16)}-${randomHex(8)}-01`;
}

export class Connection {
  /**
   * Callbacks: onWelcome(welcome, reconnected), onEvent(event),
   * onDown(reason) (an unexpected close; it reconnects), onSignedOut(reason),
   * onMindLink(up, reason) (Face lost its link to the Mind, or has it back; the socket stays),
   * onSnapshotRequired() (a resume came too late: take a snapshot, then `subscribe`),
   * onCheckSession() -> Promise<boolean> (whether the cookie is still good, asked when a
   * reconnect fails before its welcome).
   */
  constructor(callbacks) {
    this.callbacks = callbacks;
    this.lastDurableId = 0n;
    this.subscribed = false;
    this.socket = null;
    this.stopped = false;
    this.delay = FIRST_DELAY_MS;
    this.welcomed = false;
    this.everWelcomed = false;
    this.expectedSeq = 1n;
    this.prefix = randomHex(4);
    this.nextId = 1;
    // request id -> {frame, resolve, reject}; re-sent after a reconnect (their reply was lost).
    this.waiting = new Map();
    this.retry = null;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  /** Close for good (sign-out): no reconnect. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    if (this.socket) this.socket.close(NORMAL, "signed out");
    this.failWaiting(new CommandError(14, "the connection was closed"));
  }

  /** Send a command (`name` is the ConnectRequest field) and resolve with its reply's result. */
  command(name, body = {}) {
    const requestId = `${this.prefix}-${this.nextId++}`;
    const frame = { requestId, [name]: body, traceContext: { traceparent: newTraceparent() } };
    return new Promise((resolve, reject) => {
      this.waiting.set(requestId, { frame, resolve, reject, name });
      if (this.welcomed) this.send(frame);
    });
  }

  /**
   * Make a Mind call through the Face (`method` is the Mind method in lowerCamelCase, `body` its
   * request without `onBehalfOf`, which the Face fills in) and resolve with the Mind's response.
   */
  async call(method, body = {}) {
    try {
      const reply = await this.command("mind", { [method]: body });
      return reply[method] ?? {};
    } catch (error) {
      throw humanError(error);
    }
  }

  /** Start the event feed after `afterId` (a string or bigint durable id). */
  async subscribe(afterId) {
    this.lastDurableId = BigInt(afterId || 0);
    this.subscribed = true;
    await this.command("subscribe", { afterId: String(this.lastDurableId) });
  }

  open() {
    const address = new URL("ws", document.baseURI);
    address.protocol = address.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(address.href);
    this.socket = socket;
    this.welcomed = false;
    this.expectedSeq = 1n;
    socket.onopen = () => {
      const hello = { detailMode: "DETAIL_MODE_TRANSPARENT", clientName: CLIENT_NAME };
      if (this.subscribed && this.lastDurableId > 0n) hello.resumeAfterId = String(this.lastDurableId);
      this.send({ requestId: "hello", hello });
    };
    socket.onmessage = (message) => this.receive(socket, message.data);
    socket.onclose = (closed) => this.closed(socket, closed);
  }

  send(frame) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  receive(socket, data) {
    if (socket !== this.socket) return;
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      socket.close(GAP, "unreadable frame");
      return;
    }
    const seq = BigInt(frame.seq ?? 0);
    if (seq !== this.expectedSeq) {
      // A frame is missing: what it said is unknown, so start over from the last durable id.
      socket.close(GAP, `sequence gap: ${seq} after ${this.expectedSeq - 1n}`);
      return;
    }
    this.expectedSeq = seq + 1n;
    if (frame.welcome) this.welcome(frame.welcome);
    else if (frame.reply) this.reply(frame.reply);
    else if (frame.event) this.event(frame.event);
    else if (frame.replayDone) this.replayDone(frame.replayDone);
    else if (frame.mindLink) this.callbacks.onMindLink(frame.mindLink.up === true, frame.mindLink.reason ?? "");
    // `resync`: the server closes next; the resume uses our own last processed id.
  }

  welcome(welcome) {
    const reconnected = this.everWelcomed;
    this.welcomed = true;
    this.everWelcomed = true;
    this.delay = FIRST_DELAY_MS;
    for (const entry of this.waiting.values()) this.send(entry.frame);
    if (this.subscribed && this.lastDurableId === 0n) {
      // Subscribed before any durable event: the hello could not say where to resume.
      this.command("subscribe", { afterId: "0" }).catch(() => {});
    }
    this.callbacks.onWelcome(welcome, reconnected);
  }

  reply(reply) {
    const error = reply.error;
    if (reply.requestId === "hello") {
      if (error?.message?.includes(SNAPSHOT_REQUIRED)) this.callbacks.onSnapshotRequired();
      return;
    }
    const entry = this.waiting.get(reply.requestId);
    if (!entry) return;
    this.waiting.delete(reply.requestId);
    if (error) {
      if (entry.name === "subscribe" && error.message?.includes(SNAPSHOT_REQUIRED)) {
        this.callbacks.onSnapshotRequired();
      }
      entry.reject(new CommandError(error.code ?? 2, error.message ?? "the command failed"));
      return;
    }
    const { requestId: _, ...result } = reply;
    entry.resolve(Object.values(result)[0] ?? {});
  }

  event(event) {
    const id = BigInt(event.durableId ?? 0);
    if (id > 0n) {
      if (id <= this.lastDurableId) return;
      this.lastDurableId = id;
    }
    this.callbacks.onEvent(event);
  }

  replayDone(done) {
    const id = BigInt(done.lastDurableId ?? 0);
    if (id > this.lastDurableId) this.lastDurableId = id;
  }

  async closed(socket, closed) {
    if (socket !== this.socket) return;
    this.socket = null;
    const wasWelcomed = this.welcomed;
    this.welcomed = false;
    if (this.stopped) return;
    if (closed.code === UNAUTHENTICATED) {
      this.signedOut(closed.reason || "signed out");
      return;
    }
    this.callbacks.onDown(closed.reason || "connection lost");
    if (!wasWelcomed && this.callbacks.onCheckSession && !(await this.callbacks.onCheckSession())) {
      // The upgrade was refused and the cookie is no longer good: revoked while away.
      this.signedOut("signed out");
      return;
    }
    if (this.stopped) return;
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    this.retry = setTimeout(() => this.open(), wait);
  }

  signedOut(reason) {
    this.stopped = true;
    this.failWaiting(new CommandError(16, reason));
    this.callbacks.onSignedOut(reason);
  }

  failWaiting(error) {
    for (const entry of this.waiting.values()) entry.reject(error);
    this.waiting.clear();
  }
}
