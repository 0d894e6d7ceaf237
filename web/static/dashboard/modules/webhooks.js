// The Webhooks view: endpoints, their secrets and their deliveries.

import { api, apiList } from './api.js';
import { $, announce, el, timeEl } from './dom.js';
import { clearError, copyText, showError } from './feedback.js';

// ---- webhooks -------------------------------------------------------------

export async function loadWebhooks() {
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

$('new-webhook-copy').addEventListener('click', (e) => copyText($('new-webhook-secret').value, e.currentTarget));
