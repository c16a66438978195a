// The approval argument digest ("Approvals" in proto/tobe/v1/hand.proto):
//   1. parse `arguments_json` (a JSON object) with any conforming JSON parser;
//   2. write it as RFC 8785 (JSON Canonicalization Scheme) canonical JSON;
//   3. SHA-256 of its UTF-8 bytes, as 64 lowercase hex digits.
// RFC 8785 has no form for an integer outside ±(2^53−1), a number beyond a double's range, or
// a string that is not Unicode (a lone surrogate); arguments holding one are refused, naming
// where (e.g. `arguments.ids[3]`).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { parse as parseLossless } from 'lossless-json';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER); // 2^53 − 1
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Arguments that have no RFC 8785 form: `path` says where, `kind` what (as in the vectors). */
export class NotCanonicalizable extends Error {
  constructor(path, kind, problem) {
    super(`${path} ${problem}`);
    this.path = path;
    this.kind = kind;
  }
}

/**
 * Parse `arguments_json` with JSON.parse, after checking that every value in it has an RFC 8785
 * form (throws NotCanonicalizable). JSON.parse silently rounds an integer such as
 * 9007199254740992 to the nearest double, so integers are checked on the source text: a second
 * parse (lossless-json) keeps every number's digits as written.
 */
export function parseArguments(text) {
  const value = JSON.parse(text);
  // Duplicate keys: the last one wins, as in JSON.parse.
  const digits = parseLossless(text, null, {
    parseNumber: (source) => new Digits(source),
    onDuplicateKey: ({ newValue }) => newValue,
  });
  check(digits, 'arguments');
  return value;
}

/** The RFC 8785 text of parsed arguments. */
export function canonicalJson(value) {
  return canonicalize(value);
}

/** Lowercase hex SHA-256 of the canonical form of `arguments_json` (throws NotCanonicalizable). */
export function argumentsDigest(argumentsJson) {
  return digestOf(parseArguments(argumentsJson));
}

export function digestOf(value) {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

function check(value, path) {
  if (Array.isArray(value)) {
    value.forEach((item, index) => check(item, `${path}[${index}]`));
  } else if (value instanceof Digits) {
    checkNumber(value.source, path);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const where = IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${quoted(key)}]`;
      if (!key.isWellFormed()) throw notUnicode(`the key ${where}`);
      check(item, where);
    }
  } else if (typeof value === 'string' && !value.isWellFormed()) {
    throw notUnicode(path);
  }
}

// A number as written in the source text.
class Digits {
  constructor(source) {
    this.source = source;
  }
}

function checkNumber(source, path) {
  if (/^-?\d+$/.test(source)) {
    const integer = BigInt(source);
    if (integer > MAX_SAFE || integer < -MAX_SAFE) {
      throw new NotCanonicalizable(
        path,
        'integer_out_of_range',
        `is ${source}, an integer beyond ±${MAX_SAFE} (2^53−1) that the approval digest ` +
          '(RFC 8785) cannot represent; pass such a number as a string',
      );
    }
  } else if (!Number.isFinite(Number(source))) {
    throw new NotCanonicalizable(path, 'not_finite', `is ${source}, which JSON cannot represent`);
  }
}

function notUnicode(path) {
  return new NotCanonicalizable(
    path,
    'not_unicode',
    'is not valid Unicode text (a lone surrogate); JSON text must be Unicode',
  );
}

// A key written as a JSON string with non-ASCII escaped, e.g. ["é"] as ["\u00e9"].
function quoted(key) {
  return JSON.stringify(key).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
