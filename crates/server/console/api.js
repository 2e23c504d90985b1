// Every call the console makes goes through here: the public HTTP APIs, nothing else. A failure becomes an
// Error whose message says what went wrong, read from the server's OperationOutcome when there is one.

/** The last requests made, newest first, for the FHIR page's "request made" view. */
export const requestLog = [];

/** An Error raised for an HTTP answer that is not a success, or for a server that could not be reached. */
export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// A server started with `--auth` wants a bearer token (or a JWT) on the message routes, and on every route with
// `open_routes = false`. The console keeps the one entered for this tab only (sessionStorage: gone when the tab
// closes, never sent anywhere but this origin's APIs).
const TOKEN_KEY = 'thoth.token';

/** The token entered in this tab, or ''. */
export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch (_) {
    return '';
  }
}

/** Keeps `value` as this tab's token ('' forgets it) and tells the pages, which then ask again. */
export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch (_) {
    // storage refused (a private window's quota): the token lasts until the page is left
  }
  window.dispatchEvent(new CustomEvent('thoth-token'));
}

/** The readable text of an error body: OperationOutcome diagnostics, Hermes's `error`, or the text itself. */
function explain(status, text) {
  try {
    const body = JSON.parse(text);
    const issues = (body.issue || [])
      .map((i) => i.diagnostics || (i.details && i.details.text) || i.code)
      .filter(Boolean);
    if (issues.length) return issues.join('; ');
    if (body.error) return String(body.error);
  } catch (_) {
    // not JSON: the text as it is
  }
  const t = (text || '').trim();
  return t ? t.slice(0, 500) : `the server answered HTTP ${status} with no explanation`;
}

/**
 * Fetches `path` and returns its JSON (or text when `opts.text`, a Blob of the exact bytes when `opts.blob`). `opts.body` is sent as JSON when it is an
 * object, as is when it is a string; `opts.signal` cancels it (the promise then rejects with an AbortError).
 */
export async function api(path, opts = {}) {
  const init = { method: opts.method || (opts.body !== undefined ? 'POST' : 'GET'), headers: {}, signal: opts.signal };
  if (opts.body !== undefined) {
    if (typeof opts.body === 'string') {
      init.body = opts.body;
      init.headers['content-type'] = opts.contentType || 'text/plain';
    } else {
      init.body = JSON.stringify(opts.body);
      init.headers['content-type'] = opts.contentType || 'application/json';
    }
  }
  init.headers.accept = opts.accept || 'application/json, application/fhir+json;q=0.9, */*;q=0.1';
  const bearer = token();
  if (bearer) init.headers.authorization = `Bearer ${bearer}`;
  if (opts.log) requestLog.unshift({ method: init.method, path, body: init.body });
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(`could not reach the Thoth server (${e.message}); is it still running?`, 0);
  }
  // The exact bytes (a stored message need not be UTF-8).
  if (opts.blob && response.ok) return response.blob();
  const text = await response.text();
  if (!response.ok) {
    const why = explain(response.status, text);
    if (response.status === 401) {
      // The shell opens its token form; the page says why it has nothing to show.
      window.dispatchEvent(new CustomEvent('thoth-auth-needed'));
      const hint = bearer ? 'the token entered was refused' : 'enter a token with “Token” at the top';
      throw new ApiError(`not allowed: ${why}; ${hint} (HTTP 401)`, 401);
    }
    const prefix = response.status === 403 ? 'not allowed: ' : '';
    throw new ApiError(`${prefix}${why} (HTTP ${response.status})`, response.status);
  }
  if (opts.text) return text;
  try {
    return parseJson(text);
  } catch (_) {
    throw new ApiError(`the server's answer to ${path} is not JSON`, response.status);
  }
}

/** `path?` followed by the non-empty entries of `params`, URL-encoded. */
export function query(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else if (v !== undefined && v !== null && v !== '' && v !== false) q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * JSON with the integers a double cannot hold kept exact, as strings: SNOMED CT ids have up to 18 digits (the
 * metadata concepts' 900000000000003001 is beyond 2^53), and the APIs write ids as JSON numbers, as Hermes does.
 * Uses the reviver's source text where the browser gives it, else quotes long integer literals first.
 */
export function parseJson(text) {
  let sourceSeen = false;
  const value = JSON.parse(text, (_, v, ctx) => {
    if (ctx && 'source' in ctx) sourceSeen = true;
    return typeof v === 'number' && !Number.isSafeInteger(v) && Number.isInteger(v) && ctx && ctx.source ? ctx.source : v;
  });
  if (sourceSeen || !/\d{16}/.test(text)) return value;
  // Without the reviver's source: quote 16+ digit integers outside strings (strings are skipped by the pattern).
  return JSON.parse(text.replace(/("(?:[^"\\]|\\.)*")|(-?\d{16,})(?![\d.eE])/g, (m, str, num) => (str ? str : `"${num}"`)));
}

/** Whether `e` is the rejection of a request cancelled on purpose. */
export const aborted = (e) => e && e.name === 'AbortError';
