#!/usr/bin/env node
// A ToBe Hand in Node.js, written from proto/tobe/v1/hand.proto (its file comment is the
// contract quoted below). Usage: node hand.js [options] MIND_TARGET   (see README.md)
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { NotCanonicalizable, digestOf, parseArguments } from './digest.js';
import { CONFORMANCE_TOOLS, EXAMPLE_TOOLS, argumentsProblem } from './tools.js';

const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

// "Stream endings. These are final: the Hand must not reconnect with the same credential and
// hello until an operator changed something." Every other ending is retryable.
const FINAL = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.ALREADY_EXISTS,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.ABORTED,
]);
const STATUS_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30000;

const log = (message) => console.log(`${new Date().toISOString()} ${message}`);

function options() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string', default: 'laptop' },
      'token-file': { type: 'string' },
      conformance: { type: 'boolean', default: false },
      ca: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help || positionals.length !== 1) {
    console.error(
      'usage: node hand.js [--name NAME] [--token-file FILE] [--conformance] [--ca CA_PEM] ' +
        'MIND_TARGET\n  the token comes from TOBE_HAND_TOKEN unless --token-file is given',
    );
    process.exit(values.help ? 0 : 64);
  }
  const token = values['token-file']
    ? readFileSync(values['token-file'], 'utf8').trim()
    : (process.env.TOBE_HAND_TOKEN ?? '').trim();
  if (!token) {
    console.error('no Hand credential: set TOBE_HAND_TOKEN or pass --token-file');
    process.exit(64);
  }
  const tools = { ...EXAMPLE_TOOLS, ...(values.conformance ? CONFORMANCE_TOOLS : {}) };
  return { target: positionals[0], name: values.name, token, tools, ca: values.ca };
}

export class Hand {
  constructor({ target, name, token, tools, ca }) {
    const definition = protoLoader.loadSync('tobe/v1/hand.proto', {
      includeDirs: [PROTO_ROOT],
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const { HandLink } = grpc.loadPackageDefinition(definition).tobe.v1;
    const credentials = ca
      ? grpc.credentials.createSsl(readFileSync(ca))
      : grpc.credentials.createInsecure();
    this.client = new HandLink(target, credentials);
    this.name = name;
    this.token = token;
    this.tools = tools;
    // Tasks accepted and not yet settled: task_id -> { attempt, abort, result, resultSeq }.
    this.held = new Map();
    this.call = null;
    this.lastSeq = 0;
    this.heartbeatMs = 10000;
  }

  /** Stay attached; returns the final ending ({ code, details }). */
  async serve() {
    let delay = FIRST_DELAY_MS;
    for (;;) {
      const ending = await this.attach(() => {
        delay = FIRST_DELAY_MS; // "reset after a welcome"
      });
      if (FINAL.has(ending.code)) return ending;
      log(`stream ended (${STATUS_NAMES[ending.code]}: ${ending.details}); reconnecting in ${delay / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }

  /** One stream, from hello to its end; resolves with its status. */
  attach(onWelcome) {
    return new Promise((resolve) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${this.token}`);
      const call = this.client.Attach(metadata);
      this.call = call;
      let beat = null;
      let ended = false;
      const end = (status) => {
        if (ended) return;
        ended = true;
        clearInterval(beat);
        if (this.call === call) this.call = null;
        resolve({ code: status.code, details: status.details ?? '' });
      };
      call.on('status', end);
      call.on('error', end); // a non-OK status, also delivered as 'status'
      call.on('end', () => call.end());
      call.on('data', (response) => {
        if (response.frame === 'welcome') {
          const welcome = response.welcome;
          onWelcome();
          if (welcome.heartbeat_interval_ms > 0) this.heartbeatMs = welcome.heartbeat_interval_ms;
          clearInterval(beat);
          // "A Hand sends a `heartbeat` at least every `welcome.heartbeat_interval_ms`."
          beat = setInterval(() => this.heartbeat(), this.heartbeatMs);
          log(`attached as ${welcome.hand_name} (${welcome.hand_id})`);
        } else if (response.frame === 'ping') {
          this.heartbeat(); // "the Hand answers it at once with a `heartbeat`"
        } else if (['offer', 'cancel', 'ack', 'reconcile'].includes(response.frame)) {
          this[response.frame](response[response.frame]);
        }
      });
      // "AttachRequest{hello} first frame, exactly once", listing held tasks on a reconnect.
      call.write({ hello: this.hello() });
    });
  }

  hello() {
    return {
      name: this.name,
      version: '0.1.0',
      tools: Object.entries(this.tools).map(([name, tool]) => ({
        name,
        description: tool.description,
        parameters_json_schema: JSON.stringify(tool.parameters),
        effect: tool.effect,
        decision_template: tool.decision ?? '',
      })),
      held_tasks: [...this.held].map(([taskId, held]) => ({
        task_id: taskId,
        attempt: held.attempt,
        state: held.result ? 'HELD_TASK_STATE_FINISHED' : 'HELD_TASK_STATE_RUNNING',
      })),
    };
  }

  send(frame) {
    if (this.call) this.call.write(frame);
  }

  heartbeat() {
    this.send({ heartbeat: { unix_millis: Date.now() } });
  }

  /** A report carries the next `seq`; its ack echoes it. Returns the seq. */
  report(frame) {
    const seq = ++this.lastSeq;
    this.send({ ...frame, seq });
    return seq;
  }

  // -- frames from the Mind --------------------------------------------------------------

  offer(offer) {
    const { task_id: taskId, attempt } = offer;
    const current = this.held.get(taskId);
    if (current) {
      if (current.attempt === attempt) return;
      this.drop(taskId); // the Mind offers the task again under a newer attempt
    }
    const screened = this.screen(offer);
    if (typeof screened === 'string') {
      log(`rejected task ${taskId} (${offer.tool}): ${screened}`);
      this.report({ rejected: { task_id: taskId, attempt, reason: screened } });
      return;
    }
    const held = { attempt, abort: new AbortController(), result: null, resultSeq: 0 };
    this.held.set(taskId, held);
    this.report({ accepted: { task_id: taskId, attempt } });
    this.execute(taskId, held, screened.tool, screened.args);
  }

  /** A reason to reject the offer, or the tool and parsed arguments. */
  screen(offer) {
    const tool = Object.hasOwn(this.tools, offer.tool) ? this.tools[offer.tool] : null;
    if (!tool) return `this Hand has no tool "${offer.tool}"`;
    let args;
    try {
      args = parseArguments(offer.arguments_json || '{}');
    } catch (error) {
      if (error instanceof NotCanonicalizable) {
        return `the arguments cannot be bound to an approval: ${error.message}`;
      }
      return `arguments are not JSON: ${error.message}`;
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      return 'arguments must be a JSON object';
    }
    const problem = argumentsProblem(tool, args);
    if (problem) return problem;
    // "A Hand ... must reject one whose digest differs from its own."
    const digest = offer.approval?.arguments_digest;
    if (digest && digestOf(args) !== digest) {
      return 'the arguments differ from what was approved (digest mismatch)';
    }
    return { tool, args };
  }

  cancel(cancel) {
    // "A `cancel` for a task the Hand no longer holds is ignored."
    const held = this.held.get(cancel.task_id);
    if (!held || held.attempt !== cancel.attempt || held.result) return;
    log(`cancelling task ${cancel.task_id}: ${cancel.reason}`);
    held.abort.abort();
  }

  ack(ack) {
    const held = this.held.get(ack.task_id);
    if (!held || held.attempt !== ack.attempt) return;
    if (held.result) {
      // "A Hand keeps a result until it has the result's ack (any status)", matched by kind and
      // seq: an ack of an earlier progress report must not be taken for the result's.
      if (ack.kind === 'REPORT_KIND_RESULT' && ack.seq === held.resultSeq) {
        this.held.delete(ack.task_id);
      }
    } else if (ack.status !== 'ACK_STATUS_OK') {
      log(`the Mind refused task ${ack.task_id} (${ack.status}); dropping it`);
      this.drop(ack.task_id);
    }
  }

  reconcile(verdict) {
    const held = this.held.get(verdict.task_id);
    if (!held || held.attempt !== verdict.attempt) return;
    if (verdict.action === 'RECONCILE_ACTION_DROP') {
      this.drop(verdict.task_id);
    } else if (verdict.action === 'RECONCILE_ACTION_RESEND_RESULT' && held.result) {
      this.sendResult(held);
    } // KEEP_RUNNING: keep going and report later.
  }

  drop(taskId) {
    const held = this.held.get(taskId);
    this.held.delete(taskId);
    held?.abort.abort();
  }

  // -- running a task ---------------------------------------------------------------------

  async execute(taskId, held, tool, args) {
    const live = () => this.held.get(taskId) === held && !held.result;
    const progress = (message, fraction = -1) => {
      if (live()) this.report({ progress: { task_id: taskId, attempt: held.attempt, message, fraction } });
    };
    const { signal } = held.abort;
    const result = { task_id: taskId, attempt: held.attempt, ok: false, output: '', error: '', cancelled: false };
    const cancelled = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    try {
      // A tool that ignores the signal still ends the task at once on a cancel.
      const output = await Promise.race([tool.run(args, { signal, progress }), cancelled]);
      if (signal.aborted) throw signal.reason;
      Object.assign(result, { ok: true, output: String(output) });
    } catch (error) {
      if (signal.aborted) Object.assign(result, { cancelled: true, error: 'cancelled' });
      else result.error = error instanceof Error ? error.message : String(error);
    }
    if (this.held.get(taskId) === held) {
      held.result = result;
      this.sendResult(held);
    }
  }

  sendResult(held) {
    held.resultSeq = this.report({ result: held.result });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const ending = await new Hand(options()).serve();
  // A final ending: the operator must change something before this Hand may come back.
  console.error(`the Mind refused this Hand: ${STATUS_NAMES[ending.code]}: ${ending.details}`);
  process.exit(2);
}
