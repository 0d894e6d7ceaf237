// The admin API as the dashboard calls it. The bottom layer of the
// modules, above state.js: it imports no view and no session code; what a
// 401 does is given to it (onUnauthorized).

import { state } from './state.js';

export { state };

// unauthorized is called with a message when an answer is 401 outside
// sign-in: the session sets it to its sign-out.
let unauthorized = () => {};

export function onUnauthorized(fn) { unauthorized = fn; }

// ---- the admin API -------------------------------------------------------

export class ApiError extends Error {
  constructor(status, body, requestId) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || '';
    this.requestId = requestId || '';
  }
}

export class NetworkError extends Error {}

// api calls the admin API and returns the decoded body, or throws an
// ApiError (the Error body) or a NetworkError. A 401 ends the session,
// except while signing in, where it only means a wrong token.
export async function api(method, path, body, options) {
  return (await apiResponse(method, path, body, options)).data;
}

// apiList gets every item of an admin list, page by page: the largest
// pages, then the URL in each answer's Link: <...>; rel="next".
export async function apiList(path) {
  const items = [];
  let next = `${path}?limit=100`;
  for (let pages = 0; next && pages < 1000; pages++) {
    const { data, headers } = await apiResponse('GET', next);
    items.push(...data);
    const link = /<([^>]+)>;\s*rel="next"/.exec(headers.get('Link') || '');
    next = link ? link[1] : null;
  }
  return items;
}

// apiPage gets one page of a list, and the URL of the next one (null at
// the end).
export async function apiPage(path) {
  const { data, headers } = await apiResponse('GET', path);
  const link = /<([^>]+)>;\s*rel="next"/.exec(headers.get('Link') || '');
  return { data, next: link ? link[1] : null };
}

// Each POST carries an Idempotency-Key, and one whose answer is lost on
// the way (the network dropped, a proxy restarted) is sent again with the
// same key: the service then answers with the first answer instead of
// doing the work twice (a second API key whose secret nobody saw). So is
// one the service is still working on (409 idempotency_in_progress).
const attempts = 3;

function idempotencyKey() {
  // crypto.randomUUID needs a secure context; the dashboard may be served
  // over plain HTTP inside a private network.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

async function apiResponse(method, path, body, { signingIn = false } = {}) {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${state.token}` };
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const retry = method === 'POST';
  if (retry) headers['Idempotency-Key'] = idempotencyKey();
  let res;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await fetch(path, init);
    } catch (err) {
      if (!retry || attempt >= attempts) throw new NetworkError(err.message);
      await pause(500 * attempt);
      continue;
    }
    if (!retry || res.status !== 409 || attempt >= attempts || res.headers.get('Idempotent-Replayed')) break;
    const seconds = Number(res.headers.get('Retry-After'));
    if (!(seconds > 0)) break; // a 409 of the request itself: its body says why
    await pause(Math.min(seconds, 5) * 1000);
  }
  if (res.status === 204) return { data: null, headers: res.headers };
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const e = new ApiError(res.status, data, res.headers.get('X-Request-Id'));
    if (res.status === 401 && !signingIn) unauthorized('Your session ended: the admin token was not accepted. Sign in again.');
    throw e;
  }
  return { data, headers: res.headers };
}
