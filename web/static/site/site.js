// The reference page's behaviour: the contents on small screens, old-style
// anchors, and the try-it panels. The page is complete without it; this
// file only adds the panels, which need a script to send requests.
'use strict';

(() => {
  // Links of the form #operation/<operationId> (the style of other
  // reference renderers, and of this spec's own examples) lead to the
  // operation's element, whose id is the operationId itself.
  function followOperationHash() {
    const m = /^#operation\/(.+)$/.exec(location.hash);
    if (!m) return;
    const el = document.getElementById(decodeURIComponent(m[1]));
    if (!el) return;
    // replace, not replaceState: the element must become the :target.
    location.replace(`#${el.id}`);
  }
  followOperationHash();
  window.addEventListener('hashchange', followOperationHash);

  // The contents sit beside the reference on a wide screen and fold away
  // above it on a narrow one.
  const toc = document.querySelector('.toc-details');
  const wide = window.matchMedia('(min-width: 60.01rem)');
  const syncToc = () => { if (toc) toc.open = wide.matches; };
  syncToc();
  wide.addEventListener('change', syncToc);
  if (toc) {
    toc.addEventListener('click', (e) => {
      if (!wide.matches && e.target.closest('a')) toc.open = false;
    });
  }

  // One API key for every panel of the tab; sessionStorage forgets it when
  // the tab closes.
  const KEY_STORAGE = 'petstore.reference.apiKey';
  let savedKey = '';
  try { savedKey = sessionStorage.getItem(KEY_STORAGE) || ''; } catch { /* storage off: keep it in the fields only */ }
  const keyFields = () => document.querySelectorAll('.tryit-key');
  function rememberKey(value, from) {
    try { sessionStorage.setItem(KEY_STORAGE, value); } catch { /* see above */ }
    for (const f of keyFields()) if (f !== from) f.value = value;
  }

  const REASONS = {
    200: 'OK', 201: 'Created', 204: 'No Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized',
    403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 410: 'Gone',
    413: 'Content Too Large', 415: 'Unsupported Media Type', 421: 'Misdirected Request', 422: 'Unprocessable Content',
    429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
  };

  function setUp(panel) {
    const form = panel.querySelector('.tryit-form');
    const button = form.querySelector('button[type="submit"]');
    const problem = form.querySelector('.tryit-problem');
    const result = panel.querySelector('.tryit-result');
    const keyField = form.querySelector('.tryit-key');
    const bodyField = form.querySelector('.tryit-body');

    if (keyField) {
      keyField.value = savedKey;
      keyField.addEventListener('input', () => rememberKey(keyField.value, keyField));
    }

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      problem.textContent = '';
      const method = panel.dataset.method;
      let path = panel.dataset.path;
      const query = new URLSearchParams();
      const headers = { Accept: 'application/json' };

      for (const field of form.querySelectorAll('[data-in]')) {
        const value = field.value.trim();
        const name = field.dataset.name;
        if (value === '') {
          if (field.required) {
            problem.textContent = `Fill in ${name}: it is required.`;
            field.focus();
            return;
          }
          continue;
        }
        if (field.dataset.in === 'path') path = path.replace(`{${name}}`, encodeURIComponent(value));
        else if (field.dataset.in === 'query') query.append(name, value);
        else if (field.dataset.in === 'header') headers[name] = value;
      }

      const init = { method, headers, credentials: 'omit', cache: 'no-store' };
      if (bodyField && bodyField.value.trim() !== '') {
        // Sent as typed, even when it is not valid JSON: the server's
        // answer to a bad body is part of what a reader may want to see.
        init.body = bodyField.value;
        headers['Content-Type'] = bodyField.dataset.contentType || 'application/json';
      }
      let keyNote = '';
      if (keyField && keyField.value.trim() !== '') {
        headers[keyField.dataset.header] = keyField.value.trim();
        keyNote = `\n${keyField.dataset.header}: ••••••`;
      }
      const qs = query.toString();
      const url = path + (qs ? `?${qs}` : '');

      button.disabled = true;
      button.textContent = 'Sending…';
      panel.setAttribute('aria-busy', 'true');
      const started = performance.now();
      try {
        const first = await createFirst(panel, init, headers);
        if (first.body !== undefined) {
          init.body = first.body;
          bodyField.value = JSON.stringify(JSON.parse(first.body), null, 2);
        }
        keyNote += first.note;
        const res = await fetch(url, init);
        const text = await res.text();
        const ms = Math.round(performance.now() - started);
        show(result, { method, url, keyNote, res, text, ms });
      } catch (err) {
        problem.textContent = `The request did not reach the server (${err.message}). Check your connection and try again.`;
      } finally {
        button.disabled = false;
        button.textContent = 'Send request';
        panel.removeAttribute('aria-busy');
      }
    });
  }

  // createFirst makes the record the example body refers to
  // (x-try-it-first) when it does not exist: a fresh store has none. It
  // answers the body to send instead, and a line that says what it did.
  async function createFirst(panel, init, headers) {
    const { firstField: field, firstRead: read, firstCreate: create, firstBody: createBody } = panel.dataset;
    if (!field || init.body === undefined) return { note: '' };
    let body;
    try { body = JSON.parse(init.body); } catch { return { note: '' }; }
    const id = body && body[field];
    if (!Number.isInteger(id)) return { note: '' };
    const found = await fetch(read.replace(`{${field}}`, encodeURIComponent(id)), { credentials: 'omit', cache: 'no-store' });
    if (found.status !== 404) return { note: '' };
    const made = await fetch(create, {
      method: 'POST', body: createBody, credentials: 'omit', cache: 'no-store',
      headers: { ...headers, 'Content-Type': 'application/json' },
    });
    if (made.status !== 201) return { note: `\n(${field} ${id} does not exist, and POST ${create} to create it answered ${made.status})` };
    const record = await made.json();
    body[field] = record.id;
    return { body: JSON.stringify(body), note: `\n(${field} ${id} did not exist: created ${field} ${record.id} first with POST ${create})` };
  }

  function show(result, { method, url, keyNote, res, text, ms }) {
    result.querySelector('.tryit-request-line').textContent = `${method} ${url}${keyNote}`;
    const status = result.querySelector('.tryit-status');
    status.textContent = `${res.status} ${res.statusText || REASONS[res.status] || ''} · ${ms} ms`;
    status.classList.toggle('ok', res.ok);
    status.classList.toggle('error', !res.ok);
    const lines = [];
    for (const [name, value] of res.headers) lines.push(`${name}: ${value}`);
    result.querySelector('.tryit-headers').textContent = lines.join('\n');
    let body = text;
    if (/json/i.test(res.headers.get('Content-Type') || '') && text !== '') {
      try { body = JSON.stringify(JSON.parse(text), null, 2); } catch { /* show it as it came */ }
    }
    result.querySelector('.tryit-response-body').textContent = body === '' ? '(no body)' : body;
    result.hidden = false;
  }

  for (const panel of document.querySelectorAll('details.tryit')) {
    setUp(panel);
    panel.hidden = false;
  }
})();
