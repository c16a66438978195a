// What the Hand refuses before running anything, and how it settles a cancel and an ack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hand } from '../hand.js';
import { digestOf } from '../digest.js';
import { CONFORMANCE_TOOLS, EXAMPLE_TOOLS } from '../tools.js';

function hand() {
  const h = new Hand({
    target: '127.0.0.1:1',
    name: 'laptop',
    token: 'unused',
    tools: { ...EXAMPLE_TOOLS, ...CONFORMANCE_TOOLS },
  });
  h.sent = [];
  h.send = (frame) => h.sent.push(frame);
  return h;
}

const offer = (tool, args, digest) => ({
  task_id: 't1',
  attempt: 1,
  tool,
  arguments_json: args,
  approval: digest === undefined ? null : { arguments_digest: digest },
});

test('an undeclared tool is rejected', () => {
  assert.match(hand().screen(offer('rm', '{}')), /no tool "rm"/);
});

test('arguments missing a required property are rejected', () => {
  assert.match(hand().screen(offer('conformance_echo', '{}')), /missing required argument "text"/);
});

test('an approval whose digest differs from the arguments is rejected', () => {
  const approved = digestOf({ text: 'hello' });
  assert.match(hand().screen(offer('conformance_write', '{"text":"bye"}', approved)), /digest mismatch/);
});

test('an approval of {"count": 2} covers arguments written as 2.0', () => {
  const approved = digestOf({ text: 'x', count: 2 });
  const screened = hand().screen(offer('say', '{"text":"x","count":2.0}', approved));
  assert.equal(typeof screened, 'object');
});

test('an integer beyond 2^53-1 is rejected naming its path', () => {
  const reason = hand().screen(offer('conformance_echo', '{"text":"a","ids":[9007199254740993]}', ''));
  assert.match(reason, /arguments\.ids\[0\].*integer beyond/);
});

test('a cancelled wait reports ok=false cancelled=true after its progress, and the result is kept until its ack', async () => {
  const h = hand();
  h.offer(offer('conformance_wait', '{"seconds":60}'));
  assert.ok(h.sent[0].accepted);
  assert.ok(h.sent[1].progress);
  h.cancel({ task_id: 't1', attempt: 2, reason: 'not ours' }); // another attempt: ignored
  h.cancel({ task_id: 't1', attempt: 1, reason: 'stop' });
  await new Promise((resolve) => setImmediate(resolve));
  const result = h.sent.at(-1);
  assert.deepEqual([result.result.ok, result.result.cancelled], [false, true]);
  h.ack({ task_id: 't1', attempt: 1, kind: 'REPORT_KIND_PROGRESS', seq: h.sent[1].seq });
  assert.ok(h.held.has('t1'));
  h.ack({ task_id: 't1', attempt: 1, kind: 'REPORT_KIND_RESULT', seq: result.seq });
  assert.ok(!h.held.has('t1'));
});
