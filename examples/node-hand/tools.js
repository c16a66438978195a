// The tools this Hand offers. Each has a JSON Schema of its arguments, an effect class, and
// `run(args, { signal, progress })` returning the output text; `signal` aborts on a cancel.
import { setTimeout as sleep } from 'node:timers/promises';

const text = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };

export const EXAMPLE_TOOLS = {
  now: {
    description: "The current time on this device (ISO 8601, UTC) and the device's time zone.",
    parameters: { type: 'object', properties: {} },
    effect: 'EFFECT_CLASS_READ_ONLY',
    run: async () =>
      JSON.stringify({
        utc: new Date().toISOString(),
        time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      }),
  },
  say: {
    description: "Show a message on this device's console, `count` times (1 when absent).",
    parameters: {
      type: 'object',
      properties: { text: { type: 'string' }, count: { type: 'number', default: 1 } },
      required: ['text'],
    },
    effect: 'EFFECT_CLASS_EXTERNAL_SIDE_EFFECT',
    decision: 'show "{text}" {count} times',
    run: async ({ text: message, count = 1 }) => {
      const times = Math.max(0, Math.min(10, Math.floor(count)));
      for (let i = 0; i < times; i++) console.log(`SAY ${message}`);
      return `said "${message}" ${times} times`;
    },
  },
};

// Driven by `tobe hand check`; their names, schemas and behaviour are fixed.
export const CONFORMANCE_TOOLS = {
  conformance_echo: {
    description: 'Conformance: returns the text exactly.',
    parameters: text,
    effect: 'EFFECT_CLASS_READ_ONLY',
    run: async ({ text: value }) => value,
  },
  conformance_wait: {
    description: 'Conformance: reports progress at once, then waits `seconds`.',
    parameters: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
    effect: 'EFFECT_CLASS_READ_ONLY',
    run: async ({ seconds }, { signal, progress }) => {
      progress('waiting', 0);
      await sleep(seconds * 1000, undefined, { signal });
      return 'done';
    },
  },
  conformance_write: {
    description: 'Conformance: an effectful call; returns the text.',
    parameters: text,
    effect: 'EFFECT_CLASS_EXTERNAL_SIDE_EFFECT',
    run: async ({ text: value }) => value,
  },
};

const TYPES = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number',
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  array: (v) => Array.isArray(v),
  object: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
};

/** Why `args` do not fit the tool's schema (required properties and their types), or null. */
export function argumentsProblem(tool, args) {
  for (const name of tool.parameters.required ?? []) {
    if (!(name in args)) return `missing required argument "${name}"`;
  }
  for (const [name, schema] of Object.entries(tool.parameters.properties ?? {})) {
    const fits = TYPES[schema.type];
    if (name in args && fits && !fits(args[name])) {
      return `argument "${name}" must be of type ${schema.type}`;
    }
  }
  return null;
}
