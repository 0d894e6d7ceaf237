// The domain settings: the primary domain and the redirects.

import { api, state } from './api.js';
import { $, el } from './dom.js';
import { clearError, clearFieldErrors, saving } from './feedback.js';

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
// Wildcards are neither: a redirect and a primary name one host.
function addressOptions(includeDefault) {
  const names = state.domains.filter((d) => !d.name.startsWith('*.') && (!includeDefault || d.state === 'verified')).map((d) => d.name);
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

export function renderSettings() {
  const s = (state.settings && state.settings.domains) || {};
  const primaryValues = [''].concat(addressOptions(true));
  const primary = $('primary');
  const current = s.primary || '';
  if (current && !primaryValues.includes(current)) primaryValues.push(current);
  primary.replaceChildren(...primaryValues.map((v) => el('option', { value: v, textContent: v || '(none)', selected: v === current })));
  const rows = (s.redirects || []).map(redirectRow);
  $('redirects').replaceChildren(...rows);
  $('redirects-empty').hidden = rows.length !== 0;
  $('add-redirect').disabled = addressOptions(false).length === 0;
  $('add-redirect').title = addressOptions(false).length === 0 ? 'Attach a domain first: redirects go from an attached domain (not a wildcard).' : '';
}

// refreshAddressChoices offers a new domain in the settings' selects
// without losing what the operator has chosen there and not saved yet.
export function refreshAddressChoices() {
  const refill = (sel, values, label) => {
    const current = sel.value;
    if (current && !values.includes(current)) values.push(current);
    sel.replaceChildren(...values.map((v) => el('option', { value: v, textContent: label(v), selected: v === current })));
  };
  refill($('primary'), [''].concat(addressOptions(true)), (v) => v || '(none)');
  for (const sel of $('redirects').querySelectorAll('.redirect-from')) refill(sel, addressOptions(false), (v) => v);
  for (const sel of $('redirects').querySelectorAll('.redirect-to')) refill(sel, addressOptions(true), (v) => v);
  $('add-redirect').disabled = addressOptions(false).length === 0;
  $('add-redirect').title = addressOptions(false).length === 0 ? 'Attach a domain first: redirects go from an attached domain (not a wildcard).' : '';
}

$('add-redirect').addEventListener('click', () => {
  const from = addressOptions(false)[0] || '';
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
