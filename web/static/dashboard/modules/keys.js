// The API keys view: create, show once, revoke.

import { api, apiList } from './api.js';
import { $, announce, el, timeEl } from './dom.js';
import { clearError, confirmAction, copyText, onNameSubmit, showError } from './feedback.js';

// ---- API keys -------------------------------------------------------------

export async function loadKeys() {
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

$('new-key-copy').addEventListener('click', (e) => copyText($('new-key-secret').value, e.currentTarget));
