// The admin API as the dashboard calls it, and the state of the session.

import { $ } from './dom.js';
import { signOut } from './session.js';

export const state = {
  token: '',
  project: null,
  domains: [], // in the API's order
  settings: null,
  timers: new Map(), // domain name -> timeout of its next refresh
  busy: new Map(), // domain name -> 'verify' or 'remove' while under way
  cardErrors: new Map(), // domain name -> the error of its last action
  view: '',
};

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

async function apiResponse(method, path, body, { signingIn = false } = {}) {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${state.token}` };
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new NetworkError(err.message);
  }
  if (res.status === 204) return { data: null, headers: res.headers };
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const e = new ApiError(res.status, data, res.headers.get('X-Request-Id'));
    if (res.status === 401 && !signingIn) signOut('Your session ended: the admin token was not accepted. Sign in again.');
    throw e;
  }
  return { data, headers: res.headers };
}
