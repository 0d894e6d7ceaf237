// The operator's dashboard. It is a client of the admin API and nothing
// more: every value it shows comes from the API, every change goes through
// it. The admin token lives in sessionStorage (this tab only) and travels
// only as an Authorization header; no cookie is ever set, so no other site
// can make the browser act with it (no CSRF).
//
// All text from the API is put in the page with textContent, never parsed as
// HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'petstore.adminToken';
  const CERT_POLL_MS = 2000;
  const $ = (id) => document.getElementById(id);

  const state = {
    token: '',
    project: null,
    domains: [], // in the API's order
    settings: null,
    timers: new Map(), // domain name -> timeout of its next refresh
    busy: new Map(), // domain name -> 'verify' or 'remove' while under way
    cardErrors: new Map(), // domain name -> the error of its last action
    view: '',
  };

  // ---- small DOM helpers -------------------------------------------------

  // el builds an element: attrs are properties (className, textContent,
  // hidden...) or, for names with a dash or "aria"/"role", attributes.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.includes('-') || k === 'role' || k === 'for') node.setAttribute(k, v === true ? '' : String(v));
      else node[k] = v;
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function code(text) { return el('code', { textContent: text }); }

  function timeText(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
  }

  function timeEl(iso) { return el('time', { dateTime: iso, textContent: timeText(iso) }); }

  // domId makes an element id from a domain name.
  function domId(prefix, name) { return `${prefix}-${name.replace(/[^a-zA-Z0-9-]/g, '_')}`; }

  function announce(text) {
    const a = $('announcer');
    a.textContent = '';
    // A new node each time makes screen readers read a repeated message.
    window.setTimeout(() => { a.textContent = text; }, 30);
  }

  // ---- the admin API -------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body, requestId) {
      super((body && body.message) || `HTTP ${status}`);
      this.status = status;
      this.code = (body && body.code) || '';
      this.requestId = requestId || '';
    }
  }

  class NetworkError extends Error {}

  // api calls the admin API and returns the decoded body, or throws an
  // ApiError (the Error body) or a NetworkError. A 401 ends the session,
  // except while signing in, where it only means a wrong token.
  async function api(method, path, body, options) {
    return (await apiResponse(method, path, body, options)).data;
  }

  // apiList gets every item of an admin list, page by page: the largest
  // pages, then the URL in each answer's Link: <...>; rel="next".
  async function apiList(path) {
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

  const LEADS = {
    invalid_request: 'That was not accepted.',
    unauthorized: 'The admin token was not accepted.',
    plan_required: 'Custom domains need the Pro plan or above. Change the plan under Project, then try again.',
    not_found: 'It does not exist, or no longer does.',
    method_not_allowed: 'The server does not offer this action.',
    conflict: 'That conflicts with the current state.',
    domain_exists: 'That domain is attached already.',
    payload_too_large: 'That is too large to send.',
    unsupported_media_type: 'The server did not understand the request.',
    rate_limited: 'Too many requests in a short time. Wait a moment and try again.',
    internal: 'Something failed on the server.',
    unavailable: 'The server is busy or not ready. Try again in a moment.',
    insufficient_storage: "The server's disk is full, so nothing was saved. Try again once space has been freed.",
  };

  // errorContent says what went wrong in words: what the code means, then
  // the server's own message, which names the field or the value.
  function errorContent(err) {
    if (err instanceof NetworkError) {
      return [el('strong', { textContent: 'The server could not be reached.' }), ' Check that it is running and try again.'];
    }
    if (!(err instanceof ApiError)) {
      return [el('strong', { textContent: 'Something went wrong in this page.' }), ` ${err.message}`];
    }
    const lead = LEADS[err.code] || `The server answered with status ${err.status}.`;
    const parts = [el('strong', { textContent: lead })];
    if (err.message) parts.push(' ', el('span', { className: 'server-message', textContent: sentence(err.message) }));
    if (err.status >= 500 && err.requestId) parts.push(' ', el('span', { textContent: `If it keeps happening, quote request id ${err.requestId}.` }));
    return parts;
  }

  function sentence(s) {
    s = s.trim();
    if (!s) return s;
    s = s[0].toUpperCase() + s.slice(1);
    return /[.!?]$/.test(s) ? s : `${s}.`;
  }

  function showError(err, box) {
    const target = box || $('app-error');
    target.replaceChildren(...errorContent(err));
    target.hidden = false;
    return target;
  }

  function clearError(box) {
    const target = box || $('app-error');
    target.hidden = true;
    target.replaceChildren();
  }

  // aboutTheInput reports whether err is about what the user entered (the
  // server refused it), rather than about the server or the network.
  function aboutTheInput(err) {
    return !(err instanceof ApiError) || (err.status >= 400 && err.status < 500 && err.status !== 401 && err.status !== 429);
  }

  // fieldError shows err beside the field input, under it in its .field
  // (or beside the control input in the form's actions), tied to it with
  // aria-describedby and aria-invalid so that a screen reader reads it with
  // the field. A string is a hint of this page's own.
  function fieldError(input, err) {
    const id = `${input.id}-error`;
    let box = document.getElementById(id);
    if (!box) {
      box = el('p', { className: 'field-error', id, role: 'alert' });
      const field = input.closest('.field');
      if (field) field.append(box);
      else input.closest('.form-actions, form').append(box);
    }
    box.replaceChildren(...(typeof err === 'string' ? [err] : errorContent(err)));
    box.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    const described = (input.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
    if (!described.includes(id)) input.setAttribute('aria-describedby', [...described, id].join(' '));
    return box;
  }

  // clearFieldErrors takes away the errors fieldError showed in form.
  function clearFieldErrors(form) {
    for (const box of form.querySelectorAll('.field-error')) {
      box.hidden = true;
      box.replaceChildren();
    }
    for (const input of form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
  }

  // showFormError shows err beside the field it is about (fieldOf(err)), or,
  // when it is about the server or the network, in the page's banner.
  function showFormError(err, fieldOf) {
    const input = aboutTheInput(err) ? fieldOf(err) : null;
    if (input) fieldError(input, err);
    else showError(err);
  }

  // ---- sign-in ------------------------------------------------------------

  function loadToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
  }

  function saveToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch { /* storage off: the token lives in memory until reload */ }
  }

  function showSignIn(message) {
    $('app').hidden = true;
    $('session').hidden = true;
    $('sign-in').hidden = false;
    const box = $('sign-in-error');
    if (message) {
      box.textContent = message;
      box.hidden = false;
    } else {
      box.hidden = true;
    }
    $('token').focus();
  }

  function signOut(message) {
    state.token = '';
    saveToken('');
    stopAllRefreshes();
    state.project = null;
    showSignIn(message);
  }

  $('sign-in-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const input = $('token');
    const token = input.value.trim();
    const box = $('sign-in-error');
    if (!token) {
      box.textContent = 'Enter the admin token.';
      box.hidden = false;
      input.focus();
      return;
    }
    const button = e.submitter || e.target.querySelector('button[type="submit"]');
    button.disabled = true;
    state.token = token;
    try {
      state.project = await api('GET', '/admin/project', undefined, { signingIn: true });
    } catch (err) {
      state.token = '';
      if (err instanceof ApiError && err.status === 401) {
        box.textContent = 'That token was not accepted. Check it (it starts with pat_) and try again.';
      } else {
        box.replaceChildren(...errorContent(err));
      }
      box.hidden = false;
      input.focus();
      return;
    } finally {
      button.disabled = false;
    }
    saveToken(token);
    input.value = '';
    enterApp();
  });

  $('sign-out').addEventListener('click', () => signOut(''));

  function enterApp() {
    $('sign-in').hidden = true;
    $('app').hidden = false;
    $('session').hidden = false;
    showProjectName();
    route();
  }

  function showProjectName() {
    $('session-project').textContent = state.project ? state.project.name : '';
  }

  // ---- views ----------------------------------------------------------------

  const VIEWS = { project: loadProject, 'api-keys': loadKeys, domains: loadDomains, webhooks: loadWebhooks };

  function route() {
    if (!state.token) return;
    let view = location.hash.replace(/^#/, '');
    if (!(view in VIEWS)) view = 'project';
    stopAllRefreshes();
    clearError();
    state.view = view;
    for (const name of Object.keys(VIEWS)) {
      $(`view-${name}`).hidden = name !== view;
      const tab = $(`tab-${name}`);
      if (name === view) tab.setAttribute('aria-current', 'page');
      else tab.removeAttribute('aria-current');
    }
    // Until its data is in, the view is busy and inert: an edit made
    // while it loads would be overwritten by the answer.
    const section = $(`view-${view}`);
    section.setAttribute('aria-busy', 'true');
    section.inert = true;
    VIEWS[view]().catch((err) => showError(err)).finally(() => {
      section.removeAttribute('aria-busy');
      section.inert = false;
    });
  }

  window.addEventListener('hashchange', route);

  // ---- project ----------------------------------------------------------------

  // buildEl shows the binary a deploy started: its module version, and the
  // start of its git revision with the whole of it on hover.
  function buildEl(b) {
    if (!b) return document.createTextNode('—');
    const version = el('span', { textContent: b.version });
    if (!b.revision) return version;
    const rev = b.revision.slice(0, 12) + (b.modified ? ' (modified)' : '');
    return el('span', {}, version, ' ', el('code', { textContent: rev, title: `${b.revision} ${b.time || ''} ${b.goVersion}`.trim() }));
  }

  async function loadProject() {
    const p = await api('GET', '/admin/project');
    state.project = p;
    showProjectName();
    $('project-name').value = p.name;
    $('project-plan').value = p.plan;
    $('project-address').textContent = p.defaultAddress;
    $('project-slug').textContent = p.slug;
    const rows = (p.deploys || []).map((d) => el('tr', {},
      el('td', {}, timeEl(d.at)),
      el('td', { textContent: d.version }),
      el('td', {}, buildEl(d.build)),
      el('td', {}, el('span', { className: `pill pill-${d.status === 'succeeded' ? 'ok' : 'bad'}`, textContent: d.status })),
      el('td', {}, el('code', { textContent: d.specSha256.slice(0, 12), title: d.specSha256 })),
    ));
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 5, textContent: 'No deploy yet.' })));
    $('deploys').tBodies[0].replaceChildren(...rows);
  }

  $('project-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const status = $('project-status');
    status.textContent = '';
    clearError();
    clearFieldErrors(e.target);
    const name = $('project-name').value.trim();
    const plan = $('project-plan').value;
    if (!name) {
      fieldError($('project-name'), 'Give the project a name.');
      $('project-name').focus();
      return;
    }
    const patch = {};
    if (!state.project || name !== state.project.name) patch.name = name;
    if (!state.project || plan !== state.project.plan) patch.plan = plan;
    if (Object.keys(patch).length === 0) {
      status.textContent = 'Nothing to save.';
      return;
    }
    await saving(e, status, 'Project settings saved.', async () => {
      state.project = await api('PATCH', '/admin/project', patch);
      showProjectName();
      $('project-plan').value = state.project.plan;
    }, (err) => $(/\bplan\b/.test(err.message) ? 'project-plan' : 'project-name'));
  });

  // saving runs save with the form's submit button disabled, and says in
  // status (and to screen readers, as done) how it went; a refusal shows
  // beside the field fieldOf(err) names.
  async function saving(e, status, done, save, fieldOf) {
    const button = e.submitter || e.target.querySelector('button[type="submit"]');
    button.disabled = true;
    status.textContent = 'Saving…';
    try {
      await save();
      status.textContent = 'Saved.';
      announce(done);
    } catch (err) {
      status.textContent = '';
      showFormError(err, fieldOf);
    } finally {
      button.disabled = false;
    }
  }

  // ---- webhooks -------------------------------------------------------------

  async function loadWebhooks() {
    const hooks = await apiList('/admin/webhooks');
    const rows = hooks.map((w) => {
      const button = (text, label, fn) => {
        const b = el('button', { type: 'button', className: 'button button-quiet button-small', textContent: text, 'aria-label': `${label} ${w.url}` });
        b.addEventListener('click', async () => {
          clearError();
          b.disabled = true;
          try { await fn(); } catch (err) { showError(err); } finally { b.disabled = false; }
        });
        return b;
      };
      const stateText = w.enabled ? 'enabled' : 'disabled';
      return el('tr', { 'data-webhook': w.id },
        el('td', {}, el('code', { textContent: w.url }), w.description ? el('div', { className: 'help', textContent: w.description }) : null),
        el('td', { textContent: w.events.join(', ') }),
        el('td', {}, el('span', { className: `pill pill-${w.enabled ? 'ok' : 'bad'}`, textContent: stateText, title: w.disabledReason || '' }),
          w.disabledReason ? el('div', { className: 'help', textContent: w.disabledReason }) : null),
        el('td', { className: 'actions' },
          button('Send test', 'Send a test event to', async () => {
            const e = await api('POST', `/admin/webhooks/${w.id}/test`);
            announce(`Test event ${e.id} queued.`);
            await showDeliveries(w);
          }),
          button('Deliveries', 'Show the deliveries of', () => showDeliveries(w)),
          button(w.enabled ? 'Disable' : 'Enable', w.enabled ? 'Disable' : 'Enable', async () => {
            await api('PATCH', `/admin/webhooks/${w.id}`, { enabled: !w.enabled });
            await loadWebhooks();
          }),
          button('New secret', 'Give a new signing secret to', async () => {
            const r = await api('POST', `/admin/webhooks/${w.id}/rotate-secret`);
            showSecret(r.secret);
          }),
          button('Delete', 'Delete the webhook', async () => {
            if (!window.confirm(`Delete the webhook ${w.url}? Nothing more is delivered to it.`)) return;
            await api('DELETE', `/admin/webhooks/${w.id}`);
            $('deliveries-panel').hidden = true;
            await loadWebhooks();
            announce('Webhook deleted.');
          }),
        ),
      );
    });
    $('webhooks').tBodies[0].replaceChildren(...rows);
    $('webhooks').hidden = rows.length === 0;
    $('webhooks-empty').hidden = rows.length !== 0;
  }

  function showSecret(secret) {
    $('new-webhook-secret').value = secret;
    $('new-webhook').hidden = false;
    $('new-webhook').focus();
  }

  async function showDeliveries(w) {
    const list = await api('GET', `/admin/webhooks/${w.id}/deliveries?limit=20`);
    $('deliveries-title').textContent = `Deliveries to ${w.url}`;
    const rows = list.map((d) => {
      const result = d.state === 'pending' ? 'pending'
        : `${d.state}${d.status ? ` (HTTP ${d.status})` : ''}${d.error ? `: ${d.error}` : ''}${d.durationMs !== undefined ? `, ${d.durationMs} ms` : ''}`;
      const retry = el('button', { type: 'button', className: 'button button-quiet button-small', textContent: 'Retry', 'aria-label': `Deliver ${d.eventType} ${d.eventId} again` });
      retry.addEventListener('click', async () => {
        clearError();
        retry.disabled = true;
        try {
          await api('POST', `/admin/webhooks/${w.id}/deliveries/${d.id}/retry`);
          announce('Delivery queued again.');
          await showDeliveries(w);
        } catch (err) { showError(err); } finally { retry.disabled = false; }
      });
      return el('tr', { 'data-delivery': d.id },
        el('td', {}, el('code', { textContent: d.eventType }), ' ', el('span', { className: 'help', textContent: d.eventId })),
        el('td', { textContent: String(d.attempt) }),
        el('td', { className: 'delivery-result', textContent: result, title: d.response || '' }),
        el('td', {}, d.nextAttemptAt ? timeEl(d.nextAttemptAt) : '—'),
        el('td', { className: 'actions' }, d.state === 'pending' ? null : retry),
      );
    });
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 5, textContent: 'No deliveries yet.' })));
    $('deliveries').tBodies[0].replaceChildren(...rows);
    $('deliveries-panel').hidden = false;
  }

  $('webhook-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    clearError();
    const url = $('webhook-url').value.trim();
    const events = $('webhook-events').value.split(',').map((s) => s.trim()).filter(Boolean);
    if (!url) {
      showError(new Error('Give the URL the events are sent to.'));
      $('webhook-url').focus();
      return;
    }
    const body = { url, events: events.length ? events : ['*'] };
    const description = $('webhook-description').value.trim();
    if (description) body.description = description;
    const button = e.submitter || e.target.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      const w = await api('POST', '/admin/webhooks', body);
      $('webhook-url').value = '';
      $('webhook-description').value = '';
      await loadWebhooks();
      showSecret(w.secret);
      announce('Webhook added. Copy its signing secret now.');
    } catch (err) {
      showError(err);
      $('webhook-url').focus();
    } finally {
      button.disabled = false;
    }
  });

  $('new-webhook-done').addEventListener('click', () => {
    $('new-webhook-secret').value = '';
    $('new-webhook').hidden = true;
  });

  // ---- API keys -------------------------------------------------------------

  async function loadKeys() {
    const keys = await apiList('/admin/api-keys');
    const rows = keys.map((k) => {
      const revoke = el('button', { type: 'button', className: 'button button-quiet button-small', textContent: 'Revoke', 'aria-label': `Revoke the key ${k.name}` });
      revoke.addEventListener('click', () => revokeKey(k, revoke));
      return el('tr', {},
        el('td', { textContent: k.name }),
        el('td', {}, el('code', { textContent: `${k.prefix}…` })),
        el('td', {}, timeEl(k.createdAt)),
        el('td', { className: 'actions' }, revoke),
      );
    });
    $('keys').tBodies[0].replaceChildren(...rows);
    $('keys').hidden = rows.length === 0;
    $('keys-empty').hidden = rows.length !== 0;
  }

  // onNameSubmit runs a form of one name field: an empty name gets hint;
  // otherwise post(name) runs with the submit button disabled, the field is
  // emptied and done(result) follows. refocusOnError puts the caret back in
  // the field after a failure, for a name the user is likely to correct.
  function onNameSubmit({ form, field, hint, post, done, refocusOnError = false }) {
    $(form).addEventListener('submit', async (e) => {
      e.preventDefault();
      clearError();
      clearFieldErrors(e.target);
      const input = $(field);
      const name = input.value.trim();
      if (!name) {
        fieldError(input, hint);
        input.focus();
        return;
      }
      const button = e.submitter || e.target.querySelector('button[type="submit"]');
      button.disabled = true;
      try {
        const result = await post(name);
        input.value = '';
        await done(result);
      } catch (err) {
        showFormError(err, () => input);
        if (refocusOnError) input.focus();
      } finally {
        button.disabled = false;
      }
    });
  }

  onNameSubmit({
    form: 'key-form',
    field: 'key-name',
    hint: 'Say what the key is for, e.g. "shop frontend".',
    post: (name) => api('POST', '/admin/api-keys', { name }),
    done: async (key) => {
      $('new-key-secret').value = key.secret;
      $('new-key').hidden = false;
      $('new-key').focus();
      announce(`Key ${key.name} created. Copy its secret now: it is shown only once.`);
      await loadKeys();
    },
  });

  $('new-key-done').addEventListener('click', () => {
    $('new-key-secret').value = '';
    $('new-key').hidden = true;
    $('key-name').focus();
  });

  async function revokeKey(key, button) {
    const ok = await confirmAction({
      title: `Revoke the key ${key.name}?`,
      text: 'From this moment it no longer authenticates: clients that still send it get 401 unauthorized. This cannot be undone.',
      ok: 'Revoke key',
    });
    if (!ok) return;
    clearError();
    button.disabled = true;
    try {
      await api('DELETE', `/admin/api-keys/${encodeURIComponent(key.id)}`);
      announce(`Key ${key.name} revoked.`);
      await loadKeys();
      $('keys-title').focus();
    } catch (err) {
      button.disabled = false;
      showError(err);
    }
  }

  // ---- domains ----------------------------------------------------------------

  async function loadDomains() {
    const [project, domains, settings] = await Promise.all([
      api('GET', '/admin/project'),
      apiList('/admin/domains'),
      api('GET', '/admin/settings'),
    ]);
    state.project = project;
    state.domains = domains;
    state.settings = settings;
    // A form that cannot work is not offered: on the free plan the note
    // says why domains need Pro and how to change the plan; without a CNAME
    // target the service cannot say where a domain must point, and the note
    // names the flag to set instead.
    const free = project.plan === 'free';
    $('plan-note').hidden = !free;
    $('target-note').hidden = Boolean(project.cnameTarget);
    const canAdd = Boolean(project.cnameTarget) && !free;
    $('domain-form').hidden = !canAdd;
    $('domains-empty').textContent = canAdd ? 'No domains yet. Add one above.' : 'No domains yet.';
    renderDomains();
    renderSettings();
    for (const d of domains) scheduleRefresh(d);
  }

  function renderDomains() {
    const list = $('domain-list');
    const keep = new Set(state.domains.map((d) => d.name));
    for (const li of [...list.children]) if (!keep.has(li.dataset.name)) li.remove();
    let prev = null;
    for (const d of state.domains) {
      let li = list.querySelector(`li[data-name="${CSS.escape(d.name)}"]`);
      if (!li) li = el('li', { className: 'domain', 'data-name': d.name });
      renderDomain(li, d);
      // Moving an element that is already in place would take the focus
      // away from it.
      if (prev ? prev.nextElementSibling !== li : list.firstElementChild !== li) {
        if (prev) prev.after(li);
        else list.prepend(li);
      }
      prev = li;
    }
    $('domains-empty').hidden = state.domains.length !== 0;
  }

  function updateDomain(d) {
    const i = state.domains.findIndex((x) => x.name === d.name);
    if (i >= 0) state.domains[i] = d;
    else state.domains.push(d);
    renderDomains();
    refreshAddressChoices(); // a domain that just verified becomes a choice
    scheduleRefresh(d);
  }

  const STATE_WORDS = {
    pending: ['Pending', 'Waiting for its DNS record.'],
    verified: ['Verified', 'Its DNS points here.'],
    moved: ['Moved', 'Its DNS points elsewhere: it is still served with its current certificate until that expires, and becomes Verified again by itself when its DNS points here.'],
  };

  const FINDING_TITLES = {
    no_record: 'No DNS record yet',
    conflicting_record: 'Another record is in the way',
    cname_mismatch: 'The CNAME record points elsewhere',
    apex_needs_alias: 'The domain needs an ALIAS or ANAME record',
    caa_blocks_ca: 'CAA records keep the certificate authority out',
    caa_unchecked: 'CAA records name certificate authorities',
    dns_error: 'The DNS lookup failed',
  };

  // renderDomain fills a domain's card. The card element is kept across
  // updates so that focus and open menus survive a refresh.
  function renderDomain(li, d) {
    const busy = state.busy.get(d.name) || '';
    const [stateWord, stateHelp] = STATE_WORDS[d.state] || [d.state, ''];
    const headingId = domId('domain', d.name);
    li.setAttribute('aria-labelledby', headingId);
    if (busy) li.setAttribute('aria-busy', 'true');
    else li.removeAttribute('aria-busy');

    // aria-disabled rather than disabled: a disabled button loses the
    // keyboard focus, which should stay where the operator left it.
    const verify = el('button', {
      type: 'button', className: 'button verify',
      textContent: busy === 'verify' ? 'Checking…' : (d.state === 'pending' ? 'Verify' : 'Re-verify'),
      'aria-disabled': busy ? 'true' : undefined,
    });
    verify.addEventListener('click', () => {
      if (!state.busy.has(d.name)) verifyDomain(d.name);
    });

    const head = el('div', { className: 'domain-head' },
      el('h3', { id: headingId, className: 'domain-name' }, d.name,
        d.displayName && d.displayName !== d.name ? el('span', { className: 'display-name', textContent: ` (${d.displayName})` }) : null),
      el('span', { className: `state state-${d.state}`, textContent: stateWord, title: stateHelp }),
      el('div', { className: 'domain-actions' }, verify, menuFor(li, d)),
    );

    const parts = [head];
    const progress = progressText(d, busy);
    if (progress) {
      parts.push(el('p', { className: 'progress', role: 'status' }, el('span', { className: 'spinner', 'aria-hidden': 'true' }), progress));
    }
    if (state.cardErrors.has(d.name)) {
      const box = el('p', { className: 'alert alert-error', role: 'alert' });
      showError(state.cardErrors.get(d.name), box);
      parts.push(box);
    }
    parts.push(el('p', { className: 'state-help', textContent: stateHelp }));
    const note = liveNote(d);
    if (note) parts.push(note);
    parts.push(recordsSection(d));
    parts.push(checkSection(d));
    parts.push(certificateSection(d));
    if (d.troubleshooting && d.troubleshooting.length) {
      parts.push(el('section', { className: 'troubleshooting', 'aria-label': `Troubleshooting ${d.name}` },
        el('h4', { textContent: 'Still no certificate? Check these' }),
        el('ol', {}, d.troubleshooting.map((s) => el('li', { textContent: s }))),
      ));
    }
    // Keep the open state of the records across refreshes.
    const wasOpen = li.querySelector('details.records');
    const open = wasOpen ? wasOpen.open : d.state !== 'verified';
    const focusedClass = document.activeElement && li.contains(document.activeElement) ? focusKey(document.activeElement) : '';
    const menuWasOpen = !!li.querySelector('ul.menu:not([hidden])');
    li.replaceChildren(...parts);
    if (menuWasOpen) li.querySelector('ul.menu').openMenu(false);
    li.querySelector('details.records').open = open;
    if (focusedClass) {
      const again = li.querySelector(focusedClass);
      if (again) again.focus();
    }
  }

  // focusKey finds the element again after a re-render.
  function focusKey(node) {
    if (node.classList.contains('verify')) return 'button.verify';
    if (node.classList.contains('menu-button')) return 'button.menu-button';
    if (node.getAttribute('role') === 'menuitem') return '[role="menuitem"]';
    if (node.dataset.copyKey) return `button[data-copy-key="${CSS.escape(node.dataset.copyKey)}"]`;
    return '';
  }

  function progressText(d, busy) {
    if (busy === 'verify') return `Checking the DNS of ${d.name}…`;
    if (busy === 'remove') return `Removing ${d.name}…`;
    if (d.certificate && d.certificate.state === 'pending') return `Requesting a certificate for ${d.name}…`;
    return '';
  }

  // liveNote says, for a domain that pointed here once, what its last
  // checks mean for visitors and what happens next, in words: failed
  // lookups change nothing; only 3 checks in a row over an hour that find
  // the DNS pointing elsewhere make it Moved; a moved domain keeps its
  // certificate until it expires and comes back by itself.
  function liveNote(d) {
    if (d.state !== 'verified' && d.state !== 'moved') return null;
    const c = d.certificate || {};
    const next = d.nextCheckAt ? [' The service checks again by itself at ', timeEl(d.nextCheckAt), '; Re-verify checks now.'] : [];
    const checks = (n) => `${n} ${n === 1 ? 'check' : 'checks in a row'}`;
    let text;
    if (d.state === 'moved') {
      const kept = c.state === 'issued' && c.notAfter
        ? ['Visitors still get HTTPS: its current certificate is served until it expires on ', timeEl(c.notAfter), ', and is not renewed while the domain is moved.']
        : ['It has no certificate to keep serving.'];
      text = [
        'Moved: its DNS points elsewhere',
        d.pointsElsewhereSince ? [' (seen since ', timeEl(d.pointsElsewhereSince), `, on ${checks(d.pointsElsewhereChecks || 0)})`] : '',
        d.movedAt ? [', so it was marked Moved at ', timeEl(d.movedAt), '. '] : '. ',
        kept,
        ' Nothing needs to be done to bring it back: as soon as a check finds its DNS pointing here again, it is Verified again by itself and its certificate renews as usual.',
        next,
      ];
    } else if (d.pointsElsewhereChecks > 0) {
      text = [
        `The last ${checks(d.pointsElsewhereChecks)}`,
        d.pointsElsewhereSince ? [' (since ', timeEl(d.pointsElsewhereSince), ')'] : '',
        ' found its DNS pointing elsewhere. Nothing changes for visitors yet: the domain becomes Moved only when at least 3 checks in a row, over at least an hour, find the same. If the record changed by mistake, put it back.',
        next,
      ];
    } else if (d.check && (d.check.findings || []).some((f) => f.code === 'dns_error')) {
      text = [
        'The last check could not get an answer from the DNS. That is only a warning: the domain stays Verified and keeps its certificate.',
        next,
      ];
    } else {
      return null;
    }
    return el('p', { className: `live-note live-note-${d.state}` }, ...text.flat(2));
  }

  function recordsSection(d) {
    const records = d.records || [];
    const main = records.filter((r) => !r.fallback);
    const fallback = records.filter((r) => r.fallback);
    const summary = main.length === 1
      ? `DNS record to create: ${main[0].type} ${main[0].host} → ${main[0].value}`
      : 'DNS records to create';
    return el('details', { className: 'records' },
      el('summary', { textContent: summary }),
      el('p', { className: 'help', textContent: 'Create this at your DNS provider, exactly as shown, then choose Verify.' }),
      main.map((r, i) => recordCard(d, r, `m${i}`)),
      fallback.length ? el('p', { className: 'help', textContent: 'Only if your DNS provider has no ALIAS or ANAME record, create these instead:' }) : null,
      fallback.map((r, i) => recordCard(d, r, `f${i}`)),
    );
  }

  function recordCard(d, r, key) {
    const field = (label, value, copyKey, extra) => el('div', { className: 'record-field' },
      el('dt', { textContent: label }),
      el('dd', {}, code(value), extra || null,
        copyKey ? copyButton(value, `Copy the ${label.toLowerCase()} ${value}`, `${key}-${copyKey}`) : null),
    );
    return el('div', { className: 'record' },
      el('dl', { className: 'record-fields' },
        field('Type', r.type),
        field('Name', r.host, 'host', r.host !== r.name ? el('span', { className: 'hint', textContent: ` (${r.name})` }) : null),
        field('Value', r.value, 'value'),
        field('TTL', String(r.ttl)),
      ),
      r.note ? el('p', { className: 'note', textContent: r.note }) : null,
    );
  }

  function checkSection(d) {
    const sec = el('section', { className: 'check', 'aria-label': `DNS check of ${d.name}` }, el('h4', { textContent: 'DNS check' }));
    const c = d.check;
    if (!c) {
      sec.append(el('p', { textContent: 'Not checked yet. Create the record above, then choose Verify.' }));
    } else {
      const source = c.authoritative
        ? `asked the domain's own nameservers${c.nameservers && c.nameservers.length ? ` (${c.nameservers.join(', ')})` : ''}, so the answer is current`
        : 'asked through a resolver, which may still show an older answer for a while';
      sec.append(el('p', { className: 'checked' }, 'Last checked ', timeEl(c.checkedAt), `: ${source}.`));
      const findings = c.findings || [];
      if (c.verified) {
        sec.append(el('p', { className: 'ok', textContent: findings.length ? 'It checks out, with a warning:' : 'Everything checks out.' }));
      }
      if (findings.length) {
        sec.append(el('ul', { className: 'findings' }, findings.map(findingItem)));
      }
    }
    if (d.nextCheckAt && d.state === 'pending') {
      sec.append(el('p', { className: 'help' }, 'The service checks again by itself at ', timeEl(d.nextCheckAt), '; Verify checks now.'));
    }
    return sec;
  }

  function findingItem(f) {
    // A failed lookup is no evidence either way, and is retried: shown as a
    // warning, like a finding that does not keep the domain from verifying.
    const warn = f.warning || f.code === 'dns_error';
    return el('li', { className: `finding finding-${f.code}${warn ? ' warning' : ''}` },
      el('p', { className: 'finding-title', textContent: (warn ? 'Warning: ' : '') + (FINDING_TITLES[f.code] || 'Problem found') }),
      el('p', { className: 'finding-message', textContent: f.message }),
      f.found && f.found.length ? el('p', { className: 'found' }, 'Found: ', f.found.flatMap((x, i) => (i ? [', ', code(x)] : [code(x)]))) : null,
      f.expected ? el('p', { className: 'found' }, 'Expected: ', code(f.expected)) : null,
      el('p', { className: 'fix' }, el('strong', { textContent: 'How to fix it: ' }), f.fix),
    );
  }

  const EVENT_WORDS = { obtained: 'Obtained', renewed: 'Renewed', failed: 'Failed', removed: 'Removed', expiring: 'Expiring, not renewed' };

  function certificateSection(d) {
    const c = d.certificate || { state: 'none' };
    // A moved domain's certificate is served but not renewed, and it gets a
    // new one only once its DNS points here again.
    const moved = d.state === 'moved';
    let text;
    switch (c.state) {
      case 'issued':
        text = [`Issued${c.issuer ? ` by ${c.issuer}` : ''}`, c.notAfter ? [', valid until ', timeEl(c.notAfter)] : '',
          moved
            ? '. It is not renewed while the domain is moved.'
            : ['. It renews by itself', c.renewalDueAt ? [' from ', timeEl(c.renewalDueAt)] : '', ', no visitor needed.']];
        break;
      case 'renewing':
        text = ['Being renewed in the background; the current certificate stays in use', c.notAfter ? [' until ', timeEl(c.notAfter)] : '', '.'];
        break;
      case 'expired':
        text = ['Expired', c.notAfter ? [' at ', timeEl(c.notAfter)] : '',
          moved
            ? '. It is not renewed while the domain is moved; a new one is requested by itself once its DNS points here again.'
            : '. Visitors see a warning until it is renewed.'];
        break;
      case 'pending':
        text = ['Being requested from the certificate authority. This page updates by itself.'];
        break;
      case 'failed':
        text = [`The last attempt failed${c.error ? `: ${sentence(c.error)}` : '.'}`];
        break;
      default:
        text = [d.state === 'verified' ? 'Not requested yet. Re-verify to request one.'
          : moved ? 'None. One is requested by itself once its DNS points here again.' : 'Requested once the domain verifies.'];
    }
    const details = [];
    if (c.serial) details.push(el('li', {}, 'Serial ', code(c.serial), c.issuerCA ? [' from ', code(c.issuerCA)] : []));
    if (c.nextAttemptAt) {
      details.push(el('li', { className: 'next-attempt' }, 'Next attempt ', timeEl(c.nextAttemptAt),
        ` by itself (Re-verify does not bring it forward)${c.nextAttemptReason ? `: ${sentence(c.nextAttemptReason)}` : '.'}`));
    }
    for (const e of (c.events || []).slice(-3).reverse()) {
      details.push(el('li', { className: 'event' }, `${EVENT_WORDS[e.kind] || e.kind} `, timeEl(e.at), e.detail ? ` (${e.detail})` : ''));
    }
    return el('section', { className: 'certificate', 'aria-label': `Certificate of ${d.name}` },
      el('h4', {}, 'Certificate ', el('span', { className: `pill pill-cert-${c.state}`, textContent: c.state })),
      el('p', {}, ...text.flat(2)),
      details.length ? el('ul', { className: 'certificate-details' }, ...details) : null,
    );
  }

  // ---- verify, refresh and remove -----------------------------------------

  async function verifyDomain(name) {
    const li = cardOf(name);
    if (!li) return;
    state.busy.set(name, 'verify');
    state.cardErrors.delete(name);
    const d0 = state.domains.find((x) => x.name === name);
    if (d0) renderDomain(li, d0);
    announce(`Checking the DNS of ${name}…`);
    try {
      const d = await api('POST', `/admin/domains/${encodeURIComponent(name)}/verify`);
      state.busy.delete(name);
      updateDomain(d);
      if (d.check && d.check.verified) {
        announce(d.certificate && d.certificate.state === 'pending'
          ? `${name} is verified. Requesting its certificate…`
          : `${name} is verified.`);
      } else if (d.state !== 'pending') {
        // A failed lookup or a few answers pointing elsewhere do not
        // unverify a domain: say what they mean instead of "not verified".
        const note = liveNote(d);
        announce(`${name} is ${STATE_WORDS[d.state][0].toLowerCase()}.${note ? ` ${note.textContent}` : ''}`);
      } else {
        const n = d.check ? d.check.findings.filter((f) => !f.warning).length : 0;
        announce(`${name} is not verified yet: ${n} ${n === 1 ? 'problem' : 'problems'} found.`);
      }
    } catch (err) {
      state.busy.delete(name);
      failCard(name, err);
    }
  }

  // failCard shows an action's error on the domain's card; a domain that
  // is gone (removed elsewhere) leaves the list.
  function failCard(name, err) {
    if (err instanceof ApiError && err.status === 404) {
      state.domains = state.domains.filter((x) => x.name !== name);
      renderDomains();
      showError(err);
      return;
    }
    state.cardErrors.set(name, err);
    const li = cardOf(name);
    const d = state.domains.find((x) => x.name === name);
    if (li && d) renderDomain(li, d);
  }

  function cardOf(name) {
    return $('domain-list').querySelector(`li[data-name="${CSS.escape(name)}"]`);
  }

  // scheduleRefresh reloads a domain while something is under way: every
  // 2 s while its certificate is requested, and when the background check
  // is due for a pending domain (if that is soon).
  function scheduleRefresh(d) {
    stopRefresh(d.name);
    let delay = 0;
    const c = d.certificate || {};
    if (c.state === 'pending' || c.state === 'renewing') {
      delay = CERT_POLL_MS;
    } else if (c.nextAttemptAt) {
      const due = new Date(c.nextAttemptAt).getTime() - Date.now() + 1000;
      if (due > 0 && due < 10 * 60 * 1000) delay = Math.max(due, CERT_POLL_MS);
    } else if (d.state === 'pending' && d.nextCheckAt) {
      const due = new Date(d.nextCheckAt).getTime() - Date.now() + 1000;
      if (due > 0 && due < 10 * 60 * 1000) delay = Math.max(due, CERT_POLL_MS);
    }
    if (!delay) return;
    state.timers.set(d.name, window.setTimeout(() => refreshDomain(d.name), delay));
  }

  function stopRefresh(name) {
    const t = state.timers.get(name);
    if (t) window.clearTimeout(t);
    state.timers.delete(name);
  }

  function stopAllRefreshes() {
    for (const t of state.timers.values()) window.clearTimeout(t);
    state.timers.clear();
  }

  async function refreshDomain(name) {
    state.timers.delete(name);
    if (state.view !== 'domains' || !state.token) return;
    const before = state.domains.find((x) => x.name === name);
    try {
      const d = await api('GET', `/admin/domains/${encodeURIComponent(name)}`);
      if (state.view !== 'domains') return;
      updateDomain(d);
      const was = before && before.certificate ? before.certificate.state : '';
      if (was === 'pending' && d.certificate.state === 'issued') announce(`The certificate for ${name} is issued.`);
      if (was === 'pending' && d.certificate.state === 'failed') announce(`The certificate for ${name} could not be obtained.`);
    } catch (err) {
      failCard(name, err);
      if (err instanceof NetworkError && before) {
        // Keep trying while the server is away: the state is still under way.
        state.timers.set(name, window.setTimeout(() => refreshDomain(name), CERT_POLL_MS * 2));
      }
    }
  }

  async function removeDomain(name) {
    const ok = await confirmAction({
      title: `Remove ${name}?`,
      text: `From this moment ${name} gets no answer from this service: its certificate is deleted and visitors see an error. Redirects from or to it are removed too. You can add it again later.`,
      ok: 'Remove domain',
    });
    if (!ok) return;
    const li = cardOf(name);
    if (!li) return;
    stopRefresh(name);
    state.busy.set(name, 'remove');
    state.cardErrors.delete(name);
    const d = state.domains.find((x) => x.name === name);
    if (d) renderDomain(li, d);
    try {
      await api('DELETE', `/admin/domains/${encodeURIComponent(name)}`);
    } catch (err) {
      state.busy.delete(name);
      if (!(err instanceof ApiError && err.status === 404)) {
        failCard(name, err);
        return;
      }
    }
    state.busy.delete(name);
    state.cardErrors.delete(name);
    state.domains = state.domains.filter((x) => x.name !== name);
    renderDomains();
    announce(`${name} removed.`);
    $('domains-title').focus();
    try {
      state.settings = await api('GET', '/admin/settings');
    } catch (err) {
      showError(err);
    }
    renderSettings();
  }

  onNameSubmit({
    form: 'domain-form',
    field: 'domain-name',
    hint: 'Enter a domain, e.g. shop.example.com.',
    post: (name) => api('POST', '/admin/domains', { name }),
    done: (d) => {
      updateDomain(d);
      const li = cardOf(d.name);
      announce(`${d.name} added. Create the DNS record shown, then choose Verify.`);
      if (li) {
        li.scrollIntoView({ block: 'nearest' });
        const first = li.querySelector('button.verify');
        if (first) first.focus();
      }
    },
    refocusOnError: true,
  });

  // ---- the menu beside each domain ------------------------------------------

  function menuFor(li, d) {
    const menuId = domId('menu', d.name);
    const button = el('button', {
      type: 'button', className: 'button button-quiet menu-button',
      'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-controls': menuId,
      'aria-label': `More actions for ${d.name}`,
    }, el('span', { 'aria-hidden': 'true', textContent: '⋯' }));
    const remove = el('button', { type: 'button', role: 'menuitem', className: 'menu-item menu-item-danger', textContent: 'Remove domain…', tabIndex: -1 });
    const menu = el('ul', { id: menuId, role: 'menu', className: 'menu', 'aria-label': `Actions for ${d.name}`, hidden: true },
      el('li', { role: 'none' }, remove));
    const items = () => [...menu.querySelectorAll('[role="menuitem"]')];

    function open(focusFirstItem = true) {
      closeMenus();
      menu.hidden = false;
      button.setAttribute('aria-expanded', 'true');
      if (focusFirstItem) items()[0].focus();
    }
    function close(returnFocus) {
      menu.hidden = true;
      button.setAttribute('aria-expanded', 'false');
      if (returnFocus) button.focus();
    }
    menu.closeMenu = close;
    menu.openMenu = open;
    button.addEventListener('click', () => (menu.hidden ? open() : close(false)));
    button.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        open();
      }
    });
    menu.addEventListener('keydown', (e) => {
      const list = items();
      const i = list.indexOf(document.activeElement);
      if (e.key === 'Escape') {
        e.preventDefault();
        close(true);
      } else if (e.key === 'ArrowDown') {
        e.preventDefault();
        list[(i + 1) % list.length].focus();
      } else if (e.key === 'ArrowUp') {
        e.preventDefault();
        list[(i - 1 + list.length) % list.length].focus();
      } else if (e.key === 'Tab') {
        close(false);
      }
    });
    remove.addEventListener('click', () => {
      close(false);
      removeDomain(d.name);
    });
    return el('div', { className: 'menu-wrap' }, button, menu);
  }

  function closeMenus(except) {
    for (const m of document.querySelectorAll('ul.menu:not([hidden])')) {
      if (m !== except && m.closeMenu) m.closeMenu(false);
    }
  }

  document.addEventListener('click', (e) => {
    if (!e.target.closest('.menu-wrap')) closeMenus();
  });

  // ---- primary domain and redirects ------------------------------------------

  const REDIRECT_STATUSES = [
    [301, '301 Moved Permanently'],
    [302, '302 Found'],
    [307, '307 Temporary Redirect'],
    [308, '308 Permanent Redirect'],
  ];

  // addressOptions lists redirect sources (any attached domain), or with
  // includeDefault redirect targets and primary candidates: verified
  // domains and the default address, the only ones the server accepts.
  function addressOptions(includeDefault) {
    const names = state.domains.filter((d) => !includeDefault || d.state === 'verified').map((d) => d.name);
    if (includeDefault && state.project && state.project.defaultAddress && !names.includes(state.project.defaultAddress)) {
      names.push(state.project.defaultAddress);
    }
    return names;
  }

  function select(id, label, values, current) {
    const s = el('select', { id, 'aria-label': label });
    const all = values.slice();
    if (current && !all.includes(current)) all.push(current); // keep what is saved
    for (const v of all) s.append(el('option', { value: v, textContent: v, selected: String(v) === String(current) }));
    return s;
  }

  let redirectSeq = 0;

  function redirectRow(r) {
    const n = ++redirectSeq;
    const from = select(`redirect-from-${n}`, 'Redirect from', addressOptions(false), r.from);
    from.className = 'redirect-from';
    const to = select(`redirect-to-${n}`, 'Redirect to', addressOptions(true), r.to);
    to.className = 'redirect-to';
    const status = el('select', { id: `redirect-status-${n}`, className: 'redirect-status', 'aria-label': 'Redirect status' },
      REDIRECT_STATUSES.map(([code, text]) => el('option', { value: String(code), textContent: text, selected: code === (r.status || 301) })));
    const remove = el('button', { type: 'button', className: 'button button-quiet button-small', textContent: 'Remove', 'aria-label': 'Remove this redirect' });
    const row = el('li', { className: 'redirect' },
      el('label', { for: from.id, textContent: 'From' }), from,
      el('label', { for: to.id, textContent: 'to' }), to,
      el('label', { for: status.id, textContent: 'with' }), status,
      remove);
    remove.addEventListener('click', () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      $('redirects-empty').hidden = $('redirects').children.length !== 0;
      (next ? next.querySelector('select') : $('add-redirect')).focus();
    });
    return row;
  }

  function renderSettings() {
    const s = (state.settings && state.settings.domains) || {};
    const primaryValues = [''].concat(addressOptions(true));
    const primary = $('primary');
    const current = s.primary || '';
    if (current && !primaryValues.includes(current)) primaryValues.push(current);
    primary.replaceChildren(...primaryValues.map((v) => el('option', { value: v, textContent: v || '(none)', selected: v === current })));
    const rows = (s.redirects || []).map(redirectRow);
    $('redirects').replaceChildren(...rows);
    $('redirects-empty').hidden = rows.length !== 0;
    $('add-redirect').disabled = state.domains.length === 0;
    $('add-redirect').title = state.domains.length === 0 ? 'Attach a domain first: redirects go from an attached domain.' : '';
  }

  // refreshAddressChoices offers a new domain in the settings' selects
  // without losing what the operator has chosen there and not saved yet.
  function refreshAddressChoices() {
    const refill = (sel, values, label) => {
      const current = sel.value;
      if (current && !values.includes(current)) values.push(current);
      sel.replaceChildren(...values.map((v) => el('option', { value: v, textContent: label(v), selected: v === current })));
    };
    refill($('primary'), [''].concat(addressOptions(true)), (v) => v || '(none)');
    for (const sel of $('redirects').querySelectorAll('.redirect-from')) refill(sel, addressOptions(false), (v) => v);
    for (const sel of $('redirects').querySelectorAll('.redirect-to')) refill(sel, addressOptions(true), (v) => v);
    $('add-redirect').disabled = state.domains.length === 0;
    $('add-redirect').title = state.domains.length === 0 ? 'Attach a domain first: redirects go from an attached domain.' : '';
  }

  $('add-redirect').addEventListener('click', () => {
    const from = state.domains[0] ? state.domains[0].name : '';
    const to = state.project ? state.project.defaultAddress : '';
    const row = redirectRow({ from, to, status: 301 });
    $('redirects').append(row);
    $('redirects-empty').hidden = true;
    row.querySelector('select').focus();
  });

  $('settings-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    clearError();
    clearFieldErrors(e.target);
    const status = $('settings-status');
    const redirects = [...$('redirects').children].map((row) => ({
      from: row.querySelector('.redirect-from').value,
      to: row.querySelector('.redirect-to').value,
      status: Number(row.querySelector('.redirect-status').value),
    }));
    const domains = { redirects };
    if ($('primary').value) domains.primary = $('primary').value;
    await saving(e, status, 'Domain settings saved.', async () => {
      state.settings = await api('PUT', '/admin/settings', { domains });
      renderSettings();
    }, (err) => (/\bprimary\b/.test(err.message) ? $('primary') : $('add-redirect')));
  });

  // ---- copy buttons and the confirmation dialog -------------------------------

  function copyButton(text, label, key) {
    const b = el('button', { type: 'button', className: 'button button-quiet button-small copy', textContent: 'Copy', 'aria-label': label, 'data-copy-key': key });
    b.addEventListener('click', () => copyText(text, b));
    return b;
  }

  async function copyText(text, button) {
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch {
      ok = legacyCopy(text);
    }
    const label = button.textContent;
    button.textContent = ok ? 'Copied' : 'Select and copy';
    announce(ok ? 'Copied to the clipboard.' : 'Copying is blocked here: select the text and copy it.');
    window.setTimeout(() => { button.textContent = label; }, 2000);
  }

  // legacyCopy copies where the Clipboard API is refused (no permission).
  function legacyCopy(text) {
    const ta = el('textarea', { value: text, readOnly: true, className: 'offscreen' });
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }

  $('new-key-copy').addEventListener('click', (e) => copyText($('new-key-secret').value, e.currentTarget));
  $('new-webhook-copy').addEventListener('click', (e) => copyText($('new-webhook-secret').value, e.currentTarget));

  function confirmAction({ title, text, ok }) {
    const dialog = $('confirm');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = ok;
    const opener = document.activeElement;
    dialog.returnValue = '';
    dialog.showModal();
    return new Promise((resolve) => {
      dialog.addEventListener('close', () => {
        const yes = dialog.returnValue === 'ok';
        if (!yes && opener && document.contains(opener)) opener.focus();
        resolve(yes);
      }, { once: true });
    });
  }

  // ---- start ---------------------------------------------------------------

  state.token = loadToken();
  if (!state.token) {
    showSignIn('');
    return;
  }
  api('GET', '/admin/project').then((p) => {
    state.project = p;
    enterApp();
  }).catch((err) => {
    if (!(err instanceof ApiError && err.status === 401)) {
      showSignIn('');
      showError(err, $('sign-in-error'));
    }
  });
})();
