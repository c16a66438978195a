// Every vector of proto/tobe/v1/testdata/arguments_digest_vectors.json: the canonical text and
// the digest agree, and the refused inputs are refused with the path and kind named there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  NotCanonicalizable,
  argumentsDigest,
  canonicalJson,
  parseArguments,
} from '../digest.js';

const VECTORS = JSON.parse(
  readFileSync(
    fileURLToPath(
      new URL('../../../proto/tobe/v1/testdata/arguments_digest_vectors.json', import.meta.url),
    ),
    'utf8',
  ),
);

for (const vector of VECTORS.vectors) {
  test(`digest vector: ${vector.name}`, () => {
    assert.equal(canonicalJson(parseArguments(vector.arguments_json)), vector.canonical);
    assert.equal(argumentsDigest(vector.arguments_json), vector.digest);
  });
}

for (const vector of VECTORS.refused) {
  test(`refused vector: ${vector.name}`, () => {
    assert.throws(
      () => argumentsDigest(vector.arguments_json),
      (error) =>
        error instanceof NotCanonicalizable &&
        error.path === vector.path &&
        error.kind === vector.kind,
    );
  });
}

test('an object with a "source" key is read as arguments, not mistaken for a number', () => {
  assert.equal(
    canonicalJson(parseArguments('{"source":"99999999999999999999"}')),
    '{"source":"99999999999999999999"}',
  );
});

test('an integer written with a fraction or exponent is a double and has a form', () => {
  assert.equal(canonicalJson(parseArguments('{"n":9007199254740992.0}')), '{"n":9007199254740992}');
});
