// The WebSocket connection's frame rules, against a scripted socket: hello first, replies by
// request id, durable events once, a sequence gap or an unexpected close resumes after the last
// durable id with the backoff, "snapshot required" asks for a snapshot, 4016 signs out, and
// `mindLink` frames are reported.
import assert from "node:assert/strict";
import { beforeEach, mock, test } from "node:test";

class ScriptedSocket {
  static OPEN = 1;
  static opened = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.closedWith = null;
    ScriptedSocket.opened.push(this);
  }

  // What the server does.
  accept() {
    this.readyState = ScriptedSocket.OPEN;
    this.onopen();
  }

  frame(frame) {
    this.onmessage({ data: JSON.stringify(frame) });
  }

  end(code, reason = "") {
    this.readyState = 3;
    this.onclose({ code, reason });
  }

  // What the client does.
  send(text) {
    this.sent.push(JSON.parse(text));
  }

  close(code, reason) {
    this.closedWith = { code, reason };
    this.end(code, reason);
  }
}

globalThis.WebSocket = ScriptedSocket;
globalThis.document = { baseURI: "https://agent.example/tobe/" };
const { Connection } = await import("../static/js/connection.js");

function connect() {
  const seen = { events: [], signedOut: [], snapshots: 0, down: 0, welcomes: [], links: [] };
  const connection = new Connection({
    onWelcome: (welcome, reconnected) => seen.welcomes.push(reconnected),
    onEvent: (event) => seen.events.push(event),
    onDown: () => seen.down++,
    onSignedOut: (reason) => seen.signedOut.push(reason),
    onMindLink: (up, reason) => seen.links.push([up, reason]),
    onSnapshotRequired: () => seen.snapshots++,
    onCheckSession: async () => true,
  });
  connection.start();
  return { connection, seen, socket: () => ScriptedSocket.opened.at(-1) };
}

/** Accept the socket, welcome it, and return a sender of the following frames (seq 2, 3, …). */
function welcomed(socket) {
  socket.accept();
  let seq = 1;
  socket.frame({ seq: String(seq), welcome: { principal: "alice" } });
  return (frame) => socket.frame({ seq: String(++seq), ...frame });
}

const durable = (id, text) => ({
  event: { durableId: String(id), conversationKey: "p_1", messageAppended: { id: String(id), text } },
});

beforeEach(() => {
  ScriptedSocket.opened = [];
  mock.timers.reset();
  mock.timers.enable({ apis: ["setTimeout"] });
});

test("hello is the first frame, on the page's own address", () => {
  const { socket } = connect();
  socket().accept();
  assert.equal(socket().url, "wss://agent.example/tobe/ws");
  assert.deepEqual(socket().sent, [
    { requestId: "hello", hello: { detailMode: "DETAIL_MODE_TRANSPARENT", clientName: "tobe-web" } },
  ]);
});

test("a command resolves with its reply and a failed one rejects with its code", async () => {
  const { connection, socket } = connect();
  const send = welcomed(socket());
  const listed = connection.command("listConversations", { limit: 5 });
  const refused = connection.command("cancelRun", { conversationKey: "p_x" });
  const [first, second] = socket().sent.slice(1);
  assert.deepEqual(first.listConversations, { limit: 5 });
  send({ reply: { requestId: first.requestId, listConversations: { conversations: [{ key: "p_1" }] } } });
  send({ reply: { requestId: second.requestId, error: { code: 5, message: "no such conversation" } } });
  assert.deepEqual(await listed, { conversations: [{ key: "p_1" }] });
  await assert.rejects(refused, { code: 5, message: "no such conversation" });
});

test("a Mind call goes out in a mind frame and resolves with the Mind's response", async () => {
  const { connection, socket } = connect();
  const send = welcomed(socket());
  const snapshot = connection.call("getSnapshot", { conversationKey: "p_1" });
  const refused = connection.call("cancelRun", { conversationKey: "p_x" });
  const [first, second] = socket().sent.slice(1);
  assert.deepEqual(first.mind, { getSnapshot: { conversationKey: "p_1" } });
  assert.deepEqual(second.mind, { cancelRun: { conversationKey: "p_x" } });
  send({ reply: { requestId: first.requestId, mind: { getSnapshot: { lastEventId: "9" } } } });
  send({ reply: { requestId: second.requestId, error: { code: 5, message: "no such conversation" } } });
  assert.deepEqual(await snapshot, { lastEventId: "9" });
  await assert.rejects(refused, { code: 5, message: "no such conversation" });
});

test("a sequence gap reconnects and resumes after the last durable event, without duplicates", async () => {
  const { connection, seen, socket } = connect();
  const send = welcomed(socket());
  const subscribed = connection.subscribe("10");
  send({ reply: { requestId: socket().sent[1].requestId, subscribe: { afterId: "10" } } });
  await subscribed;
  send(durable(11, "one"));
  send(durable(12, "two"));
  const first = socket();
  first.frame({ seq: "9", ...durable(13, "after a gap") });
  assert.equal(first.closedWith.code, 3000);
  assert.equal(seen.down, 1);
  mock.timers.tick(500);
  await Promise.resolve();
  assert.notEqual(socket(), first);
  const resend = welcomed(socket());
  assert.equal(socket().sent[0].hello.resumeAfterId, "12");
  resend(durable(12, "two"));
  resend(durable(13, "three"));
  assert.deepEqual(
    seen.events.map((event) => event.messageAppended.text),
    ["one", "two", "three"],
  );
  assert.deepEqual(seen.welcomes, [false, true]);
});

test("a command whose reply was lost is sent again after the reconnect", async () => {
  const { connection, socket } = connect();
  welcomed(socket());
  const sending = connection.command("sendChat", { text: "hi", idempotencyKey: "k1" });
  socket().end(1006);
  mock.timers.tick(500);
  await Promise.resolve();
  const send = welcomed(socket());
  const again = socket().sent.find((frame) => frame.sendChat);
  assert.equal(again.sendChat.idempotencyKey, "k1");
  send({ reply: { requestId: again.requestId, sendChat: { messageId: "4" } } });
  assert.deepEqual(await sending, { messageId: "4" });
});

test("reconnects back off from 0.5 s, doubling up to 5 s", async () => {
  const { socket } = connect();
  const waits = [];
  for (let attempt = 0; attempt < 6; attempt++) {
    const before = socket();
    before.end(1006);
    await Promise.resolve(); // the session check
    await Promise.resolve();
    let waited = 0;
    while (socket() === before) {
      mock.timers.tick(100);
      waited += 100;
    }
    waits.push(waited);
  }
  assert.deepEqual(waits, [500, 1000, 2000, 4000, 5000, 5000]);
});

test("a resume the Mind no longer keeps asks for a snapshot", () => {
  const { seen, socket } = connect();
  const send = welcomed(socket());
  send({ reply: { requestId: "hello", error: { code: 9, message: "snapshot required" } } });
  assert.equal(seen.snapshots, 1);
});

test("close code 4016 signs out for good", () => {
  const { seen, socket } = connect();
  welcomed(socket());
  socket().end(4016, "credential revoked");
  mock.timers.tick(10_000);
  assert.deepEqual(seen.signedOut, ["credential revoked"]);
  assert.equal(ScriptedSocket.opened.length, 1);
});

test("Face's link to the Mind going down and coming back is reported, the socket kept", () => {
  const { seen, socket } = connect();
  const send = welcomed(socket());
  // protobuf JSON leaves out `up: false`.
  send({ mindLink: { reason: "the Face lost its link to the Mind (UNAVAILABLE)" } });
  send({ mindLink: { up: true } });
  assert.deepEqual(seen.links, [
    [false, "the Face lost its link to the Mind (UNAVAILABLE)"],
    [true, ""],
  ]);
  assert.equal(seen.down, 0);
  assert.equal(socket().closedWith, null);
  assert.equal(ScriptedSocket.opened.length, 1);
});
