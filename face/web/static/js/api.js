// The HTTP side of the web client: who is signed in, pairing a code, signing out. The session
// token lives in an HttpOnly cookie the page never sees; these calls only carry it.

const JSON_HEADERS = { "Content-Type": "application/json" };

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function url(path) {
  return new URL(path, document.baseURI).href;
}

async function errorOf(response, fallback) {
  try {
    const body = await response.json();
    if (body && typeof body.error === "string" && body.error) return body.error;
  } catch {
    // Not JSON (a proxy's page): say what happened in our words.
  }
  return fallback;
}

/** `{principal, scopes}` of the signed-in session, or null when there is none. */
export async function currentSession() {
  const response = await fetch(url("api/session"), { credentials: "same-origin" });
  if (response.status === 401) return null;
  if (!response.ok) {
    throw new ApiError(response.status, await errorOf(response, `the server answered ${response.status}`));
  }
  return response.json();
}

const PAIR_FAILURES = {
  400: "That is not a pairing code; it looks like ABCDE-12345.",
  410: "This code is unknown, already used or expired; make a new one.",
  429: "Too many attempts; wait a minute and try again.",
  503: "ToBe is not reachable right now; try again shortly.",
};

/** Redeem a one-time pairing code; the server answers with the session cookie. Pairing this
 * browser again signs its earlier session out (same `device_id`). */
export async function pair(code, device) {
  const response = await fetch(url("api/pair"), {
    method: "POST",
    credentials: "same-origin",
    headers: JSON_HEADERS,
    body: JSON.stringify({ code, device, device_id: deviceId() }),
  });
  if (response.status !== 204 && !response.ok) {
    const fallback = PAIR_FAILURES[response.status] ?? `Signing in failed (${response.status}).`;
    throw new ApiError(response.status, await errorOf(response, fallback));
  }
}

export async function logout() {
  const response = await fetch(url("api/logout"), { method: "POST", credentials: "same-origin" });
  if (response.status !== 204 && !response.ok) {
    throw new ApiError(response.status, await errorOf(response, `Signing out failed (${response.status}).`));
  }
}

const DEVICE_ID_KEY = "tobe.device_id";

/** This browser's own random id, made once and kept in its storage; "" when storage is off. */
export function deviceId() {
  try {
    let id = localStorage.getItem(DEVICE_ID_KEY);
    if (!id || !/^[A-Za-z0-9_-]{8,64}$/.test(id)) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      id = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
      localStorage.setItem(DEVICE_ID_KEY, id);
    }
    return id;
  } catch {
    return "";
  }
}

/** "Firefox on Linux": how this browser is listed among the principal's credentials. */
export function deviceName() {
  const agent = navigator.userAgent;
  const browser =
    [["Edg/", "Edge"], ["Firefox/", "Firefox"], ["Chrome/", "Chrome"], ["Safari/", "Safari"]].find(
      ([marker]) => agent.includes(marker),
    )?.[1] ?? "Browser";
  const system =
    [["Android", "Android"], ["iPhone", "iOS"], ["iPad", "iOS"], ["Windows", "Windows"], ["Mac OS", "macOS"], ["Linux", "Linux"]].find(
      ([marker]) => agent.includes(marker),
    )?.[1] ?? "an unknown system";
  return `${browser} on ${system} (web)`;
}
