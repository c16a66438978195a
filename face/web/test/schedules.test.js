// How the web client words a scheduled action's trigger, state and outcome: as `tobe chat`
// does (tobe/schedules.py), with instants in the browser's local time.
import assert from "node:assert/strict";
import { test } from "node:test";

import { describeTrigger, localTime, mayFire, outcomeWord, stateWord } from "../static/js/schedules.js";

test("an interval reads in the largest whole unit", () => {
  assert.equal(describeTrigger({ interval: { everySeconds: "7200" } }), "every 2 h");
  assert.equal(describeTrigger({ interval: { everySeconds: "172800" } }), "every 2 d");
  assert.equal(describeTrigger({ interval: { everySeconds: "90" } }), "every 90 s");
});

test("a one-time trigger reads in local time", () => {
  const at = "2030-01-15T08:00:00Z";
  assert.equal(describeTrigger({ at, timeZone: "Europe/Paris" }), `at ${localTime(at)}`);
  assert.equal(localTime(""), "");
});

test("cron and conditions read as tobe chat says them", () => {
  assert.equal(
    describeTrigger({ cron: { expression: "0 9 * * 1-5" }, timeZone: "Europe/Paris" }),
    "on cron '0 9 * * 1-5' (Europe/Paris)",
  );
  assert.equal(describeTrigger({ cron: { expression: "0 9 * * *" } }), "on cron '0 9 * * *' (UTC)");
  assert.equal(
    describeTrigger({ observation: { adapter: "ci", kind: "build", match: "failed" } }),
    "when ci reports build matching /failed/",
  );
  assert.equal(describeTrigger({ observation: {} }), "when any adapter reports anything");
  assert.equal(
    describeTrigger({ memory: { key: "diet", match: "vegan" } }),
    "when memory 'diet' changes to match /vegan/",
  );
  assert.equal(describeTrigger({}), "never (no trigger)");
});

test("states and outcomes are words, and only active or paused actions may fire", () => {
  assert.equal(stateWord("SCHEDULE_STATE_PAUSED"), "paused");
  assert.equal(outcomeWord({ lastFiring: { outcome: "FIRING_OUTCOME_SENT" } }), "sent");
  assert.equal(outcomeWord({}), "");
  assert.ok(mayFire({ state: "SCHEDULE_STATE_ACTIVE" }));
  assert.ok(mayFire({ state: "SCHEDULE_STATE_PAUSED" }));
  assert.ok(!mayFire({ state: "SCHEDULE_STATE_FINISHED" }));
  assert.ok(!mayFire({ state: "SCHEDULE_STATE_DELETED" }));
});
