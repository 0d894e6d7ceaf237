// What the operator does to a domain (verify, remove, add) and the
// refreshes that follow work under way: the top of the Domains view,
// above domains.js (the cards), to which it gives its actions.

import { api, ApiError, NetworkError, state } from './api.js';
import { $, announce, domId, el } from './dom.js';
import { giveActions, liveNote, renderDomain, renderDomains, STATE_WORDS, updateDomain } from './domains.js';
import { confirmAction, onNameSubmit, showError } from './feedback.js';
import { renderSettings } from './settings.js';

const CERT_POLL_MS = 2000;

// The view is loaded through this module, so that the cards have their
// actions.
export { loadDomains } from './domains.js';

// ---- verify, refresh and remove -----------------------------------------

export async function verifyDomain(name) {
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
  // A 401 ended the session, and the sign-in form says why: kept, it would
  // show on the card once signed in again.
  if (err instanceof ApiError && err.status === 401) return;
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
export function scheduleRefresh(d) {
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

export function menuFor(li, d) {
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

giveActions({ menuFor, scheduleRefresh, verifyDomain });
