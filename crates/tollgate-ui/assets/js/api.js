// Calls to the gateway's public management API, authenticated by the session cookie.
// A state-changing call carries the session's CSRF token in x-tollgate-csrf, as the
// gateway requires; every error is turned into an ApiError whose message says what went wrong.

let csrfToken = null;

/** Sets the CSRF token the login (or GET /ui/api/session) answered with. */
export function setCsrf(token) {
  csrfToken = token;
}

/** A failed call: `status` (0 when the gateway could not be reached) and a readable message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The error text of an answer: LiteLLM's {"error": {"message"}} or FastAPI's {"detail"}. */
function messageOf(data, text, status) {
  const m = data?.error?.message ?? data?.detail?.error ?? data?.detail ?? data?.message;
  if (typeof m === 'string' && m) return m;
  if (m) return JSON.stringify(m);
  return text || `HTTP ${status}`;
}

/** The parsed JSON of `resp` (null when empty or not JSON); an ApiError when it is not a 2xx. */
async function answer(resp) {
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    throw new ApiError(resp.status, `${resp.status}: ${messageOf(data, text, resp.status)}`);
  }
  return data;
}

/** `method path` with an optional JSON body; resolves to the parsed JSON answer. */
export async function call(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-tollgate-csrf'] = csrfToken;
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, `The gateway could not be reached (${e.message}).`);
  }
  return answer(resp);
}

/** GET `path` (with `query` entries that are not empty). */
export function get(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return call('GET', s ? `${path}?${s}` : path);
}

/** POST `path` with JSON `body`. */
export function post(path, body = {}) {
  return call('POST', path, body);
}

/**
 * POST `path` with JSON `body` authenticated by the virtual key `key` (`Authorization:
 * Bearer`), not by the session: the gateway's model routes (`/v1/chat/completions`) take a
 * key only. Resolves to `{data, headers, ms}` (`ms`: the time until the whole answer arrived);
 * a failed call throws an ApiError with the gateway's message.
 */
export async function postWithKey(path, key, body) {
  const started = performance.now();
  let resp;
  try {
    resp = await fetch(path, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${key}` },
      credentials: 'omit',
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, `The gateway could not be reached (${e.message}).`);
  }
  const data = await answer(resp);
  return { data, headers: resp.headers, ms: performance.now() - started };
}

/** Whether the session may change things (proxy_admin) rather than only read them. */
export function canWrite(session) {
  return session?.user_role === 'proxy_admin';
}

/** Whether the session may read every entity (proxy_admin or proxy_admin_viewer). */
export function canRead(session) {
  return canWrite(session) || session?.user_role === 'proxy_admin_viewer';
}
