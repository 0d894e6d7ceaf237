// The Webhooks view: endpoints, their secrets and their deliveries. While
// it is open it reads them again every few seconds, and redraws only what
// changed, so that a failing endpoint shows as it fails.

import { api, apiList } from './api.js';
import { $, announce, el, timeEl } from './dom.js';
import { clearError, copyText, showError } from './feedback.js';
import { refreshWhileShown } from './state.js';

const REFRESH_MS = 3000;

// shown is what the view shows: the webhooks' JSON as last drawn, the
// webhook whose deliveries are open and their JSON as last drawn.
const shown = { hooks: '', open: null, deliveries: '' };

// answersOpen are the deliveries whose answer the operator opened: a
// redraw keeps them open.
const answersOpen = new Set();

// ---- webhooks -------------------------------------------------------------

export async function loadWebhooks() {
  answersOpen.clear();
  shown.hooks = '';
  shown.open = null;
  shown.deliveries = '';
  $('deliveries-panel').hidden = true;
  await drawWebhooks();
  refreshWhileShown('webhooks', REFRESH_MS, async () => {
    await drawWebhooks();
    if (shown.open) await drawDeliveries(shown.open);
  }, showError);
}

// health is a webhook's state as the operator judges it: an enabled
// endpoint whose deliveries fail is failing, not fine.
function health(w) {
  if (!w.enabled) return { word: 'disabled', pill: 'pill-off' };
  if (w.failingSince) return { word: 'failing', pill: 'pill-bad' };
  return { word: 'enabled', pill: 'pill-ok' };
}

function healthCell(w) {
  const h = health(w);
  return el('td', { className: 'webhook-state' },
    el('span', { className: `pill ${h.pill}`, textContent: h.word, title: w.disabledReason || '' }),
    w.enabled && w.failingSince ? el('div', { className: 'help failing-since' }, 'Failing since ', timeEl(w.failingSince)) : null,
    w.disabledReason ? el('div', { className: 'help disabled-reason', textContent: w.disabledReason }) : null);
}

async function drawWebhooks() {
  const hooks = await apiList('/admin/webhooks');
  const json = JSON.stringify(hooks);
  if (json === shown.hooks) return;
  shown.hooks = json;
  if (shown.open) {
    const w = hooks.find((x) => x.id === shown.open.id);
    if (w) {
      shown.open = w;
      drawDeliveriesTitle(w);
    }
  }
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
    return el('tr', { 'data-webhook': w.id },
      el('td', { className: 'webhook-url' }, el('code', { textContent: w.url }), w.description ? el('div', { className: 'help', textContent: w.description }) : null),
      el('td', { className: 'webhook-events' }, ...w.events.map((e) => el('code', { className: 'event-type', textContent: e }))),
      healthCell(w),
      el('td', { className: 'actions' },
        button('Send test', 'Send a test event to', async () => {
          const e = await api('POST', `/admin/webhooks/${w.id}/test`);
          announce(`Test event ${e.id} queued.`);
          await showDeliveries(w);
        }),
        button('Deliveries', 'Show the deliveries of', () => showDeliveries(w)),
        button(w.enabled ? 'Disable' : 'Enable', w.enabled ? 'Disable' : 'Enable', async () => {
          await api('PATCH', `/admin/webhooks/${w.id}`, { enabled: !w.enabled });
          await drawWebhooks();
        }),
        button('New secret', 'Give a new signing secret to', async () => {
          const r = await api('POST', `/admin/webhooks/${w.id}/rotate-secret`);
          showSecret(r.secret);
        }),
        button('Delete', 'Delete the webhook', async () => {
          if (!window.confirm(`Delete the webhook ${w.url}? Nothing more is delivered to it.`)) return;
          await api('DELETE', `/admin/webhooks/${w.id}`);
          if (shown.open && shown.open.id === w.id) {
            shown.open = null;
            $('deliveries-panel').hidden = true;
          }
          await drawWebhooks();
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
  shown.open = w;
  shown.deliveries = '';
  drawDeliveriesTitle(w);
  await drawDeliveries(w);
  $('deliveries-panel').hidden = false;
}

function drawDeliveriesTitle(w) {
  const h = health(w);
  $('deliveries-title').replaceChildren(`Deliveries to ${w.url} `, el('span', { className: `pill ${h.pill}`, textContent: h.word }));
}

// RESULT_WORDS name an attempt's state, and an event's by its latest
// attempt.
const RESULT_WORDS = {
  succeeded: ['succeeded', 'pill-ok'],
  failed: ['failed', 'pill-bad'],
  pending: ['pending', 'pill-wait'],
};

// byEvent groups deliveries (newest first) by event, newest event first,
// each event's attempts in the order they were made.
function byEvent(list) {
  const groups = new Map();
  for (const d of list) {
    if (!groups.has(d.eventId)) groups.set(d.eventId, []);
    groups.get(d.eventId).push(d);
  }
  return [...groups.values()].map((attempts) => attempts.sort((a, b) => a.id - b.id));
}

// eventSummary says where an event's delivery stands, from its latest
// attempt.
function eventSummary(attempts) {
  const last = attempts[attempts.length - 1];
  if (last.state === 'succeeded') return ['delivered', 'pill-ok'];
  if (last.state === 'pending') return attempts.length > 1 ? ['retrying', 'pill-warn'] : ['pending', 'pill-wait'];
  return ['failed', 'pill-bad'];
}

async function drawDeliveries(w) {
  const list = await api('GET', `/admin/webhooks/${w.id}/deliveries?limit=100`);
  const json = JSON.stringify(list);
  if (json === shown.deliveries && shown.open && shown.open.id === w.id) return;
  shown.deliveries = json;
  const table = $('deliveries');
  // A redraw keeps the keyboard focus on the same control of the same
  // event, if it is still there.
  const focused = document.activeElement && document.activeElement.closest('#deliveries tbody[data-event]');
  const focusLabel = focused ? document.activeElement.getAttribute('aria-label') : null;
  for (const b of [...table.tBodies]) b.remove();
  $('deliveries-empty').hidden = list.length !== 0;
  for (const attempts of byEvent(list)) table.append(eventGroup(w, attempts));
  if (focused && focusLabel) {
    const again = table.querySelector(`tbody[data-event="${CSS.escape(focused.dataset.event)}"] [aria-label="${CSS.escape(focusLabel)}"]`);
    if (again) again.focus();
  }
  $('deliveries-updated').replaceChildren('Read ', timeEl(new Date().toISOString()), '; read again every few seconds while this view is open.');
}

function eventGroup(w, attempts) {
  const first = attempts[0];
  const last = attempts[attempts.length - 1];
  const [word, pill] = eventSummary(attempts);
  let retry = null;
  if (last.state !== 'pending') {
    retry = el('button', { type: 'button', className: 'button button-quiet button-small', textContent: 'Retry', 'aria-label': `Deliver ${first.eventType} ${first.eventId} again` });
    retry.addEventListener('click', async () => {
      clearError();
      retry.disabled = true;
      try {
        await api('POST', `/admin/webhooks/${w.id}/deliveries/${last.id}/retry`);
        announce('Delivery queued again.');
        await drawDeliveries(w);
      } catch (err) { showError(err); } finally { retry.disabled = false; }
    });
  }
  const head = el('tr', { className: 'event-row' },
    el('th', { scope: 'rowgroup', colSpan: 5 },
      el('code', { className: 'event-type', textContent: first.eventType }), ' ',
      el('span', { className: 'event-id', textContent: first.eventId }), ' ',
      el('span', { className: `pill ${pill}`, textContent: word }), ' ',
      el('span', { className: 'attempt-count', textContent: attempts.length === 1 ? '1 attempt' : `${attempts.length} attempts` })),
    el('td', { className: 'actions' }, retry));
  return el('tbody', { className: 'event-group', 'data-event': first.eventId }, head, ...attempts.map(attemptRow));
}

// duration is how long an attempt took (the API leaves out a time under a
// millisecond).
function duration(d) {
  if (!d.attemptedAt) return '—';
  return d.durationMs ? `${d.durationMs} ms` : '< 1 ms';
}

function attemptRow(d) {
  const [word, pill] = RESULT_WORDS[d.state] || [d.state, 'pill-wait'];
  const details = [];
  if (d.error) details.push(el('div', { className: 'delivery-error', textContent: d.error }));
  if (d.response) {
    const answer = el('details', { className: 'delivery-response', open: answersOpen.has(d.id) },
      el('summary', { textContent: 'Answer', 'aria-label': `The answer to attempt ${d.attempt}` }), el('pre', { textContent: d.response }));
    answer.addEventListener('toggle', () => {
      if (answer.open) answersOpen.add(d.id);
      else answersOpen.delete(d.id);
    });
    details.push(answer);
  }
  return el('tr', { className: `attempt-row attempt-${d.state}`, 'data-delivery': d.id },
    el('td', { className: 'attempt-no' }, `Attempt ${d.attempt}`, d.manual ? el('span', { className: 'tag', textContent: 'manual' }) : null),
    el('td', { className: 'delivery-result' },
      el('span', { className: `pill ${pill}`, textContent: word }),
      d.status ? el('span', { className: 'status-code', textContent: `HTTP ${d.status}` }) : null),
    el('td', { className: 'attempted-at' }, d.attemptedAt ? timeEl(d.attemptedAt) : el('span', { className: 'help' }, 'due ', timeEl(d.scheduledAt))),
    el('td', { className: 'duration' }, duration(d)),
    el('td', { className: 'delivery-details' }, details.length ? details : '—'),
    el('td', { className: 'next-attempt' }, d.nextAttemptAt ? el('span', {}, 'next ', timeEl(d.nextAttemptAt)) : '—'),
  );
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
    await drawWebhooks();
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

$('new-webhook-copy').addEventListener('click', (e) => copyText($('new-webhook-secret').value, e.currentTarget));
