// How a scheduled action reads, as `tobe chat`'s `/schedules` says it (tobe/schedules.py):
// its trigger as a phrase, its state and last outcome as words. Instants are shown in this
// browser's local time, the zone the person reading it is in.

const TIME_FORMAT = { dateStyle: "medium", timeStyle: "short" };
const DURATION_UNITS = [
  [86400, "d"],
  [3600, "h"],
  [60, "min"],
];

/** An RFC 3339 instant (protobuf's JSON Timestamp) in local time, "" when unset. */
export function localTime(stamp) {
  if (!stamp) return "";
  const moment = new Date(stamp);
  return Number.isNaN(moment.getTime()) ? stamp : moment.toLocaleString(undefined, TIME_FORMAT);
}

function duration(seconds) {
  for (const [size, unit] of DURATION_UNITS) {
    if (seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

/** When it fires: "every 2 h", "at 15 Jan 2030, 09:00", "on cron '0 9 * * 1-5' (Europe/Paris)"… */
export function describeTrigger(trigger = {}) {
  if (trigger.at) return `at ${localTime(trigger.at)}`;
  if (trigger.interval) return `every ${duration(Number(trigger.interval.everySeconds ?? 0))}`;
  if (trigger.cron) return `on cron '${trigger.cron.expression ?? ""}' (${trigger.timeZone || "UTC"})`;
  if (trigger.observation) {
    const { adapter, kind, match } = trigger.observation;
    const pattern = match ? ` matching /${match}/` : "";
    return `when ${adapter || "any adapter"} reports ${kind || "anything"}${pattern}`;
  }
  if (trigger.memory) {
    const pattern = trigger.memory.match ? ` to match /${trigger.memory.match}/` : "";
    return `when memory '${trigger.memory.key ?? ""}' changes${pattern}`;
  }
  return "never (no trigger)";
}

/** "active", "paused", "finished", "deleted". */
export function stateWord(state) {
  return (state ?? "SCHEDULE_STATE_UNSPECIFIED").replace("SCHEDULE_STATE_", "").toLowerCase();
}

/** The latest firing's outcome ("sent", "skipped"…), "" when it never fired. */
export function outcomeWord(action) {
  const outcome = action.lastFiring?.outcome;
  return outcome ? outcome.replace("FIRING_OUTCOME_", "").toLowerCase() : "";
}

/** Whether it may still fire (what a conversation's list shows). */
export function mayFire(action) {
  return ["active", "paused"].includes(stateWord(action.state));
}
