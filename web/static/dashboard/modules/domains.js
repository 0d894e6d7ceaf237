// The Domains view: each domain's card, with its records, its last DNS
// check and its certificate.

import { api, apiList, state } from './api.js';
import { $, code, domId, el, timeEl } from './dom.js';
import { copyButton, sentence, showError } from './feedback.js';
import { refreshAddressChoices, renderSettings } from './settings.js';

// The actions of a card (verify, its menu) and the refresh of work under
// way are domain-actions.js's, the layer above, which gives them here:
// the cards call them without importing their module.
const actions = { menuFor: null, scheduleRefresh: null, verifyDomain: null };

export function giveActions(a) { Object.assign(actions, a); }

const menuFor = (li, d) => actions.menuFor(li, d);
const scheduleRefresh = (d) => actions.scheduleRefresh(d);
const verifyDomain = (name) => actions.verifyDomain(name);

// ---- domains ----------------------------------------------------------------

export async function loadDomains() {
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
  // names the flag to set instead. In development the target is a
  // placeholder: domains can be added, and the note says what is simulated.
  const free = project.plan === 'free';
  $('plan-note').hidden = !free;
  $('target-note').hidden = Boolean(project.cnameTarget);
  $('development-note').hidden = !project.development;
  const canAdd = Boolean(project.cnameTarget) && !free;
  $('domain-form').hidden = !canAdd;
  $('domains-empty').textContent = canAdd ? 'No domains yet. Add one above.' : 'No domains yet.';
  renderDomains();
  renderSettings();
  for (const d of domains) scheduleRefresh(d);
}

export function renderDomains() {
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

export function updateDomain(d) {
  const i = state.domains.findIndex((x) => x.name === d.name);
  if (i >= 0) state.domains[i] = d;
  else state.domains.push(d);
  renderDomains();
  refreshAddressChoices(); // a domain that just verified becomes a choice
  scheduleRefresh(d);
}

export const STATE_WORDS = {
  pending: ['Pending', 'Waiting for its DNS record.'],
  owned: ['Owned', 'Its ownership record is in place while its traffic still goes elsewhere: its certificate is obtained before you switch.'],
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
export function renderDomain(li, d) {
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
    textContent: busy === 'verify' ? 'Checking…' : (d.state === 'pending' || d.state === 'owned' ? 'Verify' : 'Re-verify'),
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
  if (d.name.startsWith('*.')) parts.push(wildcardNote(d.name));
  const note = liveNote(d) || ownedNote(d);
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

// wildcardNote says which names a wildcard serves, with an example.
function wildcardNote(name) {
  const base = name.slice(2);
  return el('p', { className: 'wildcard-note' },
    'Wildcard: serves every name one level below ', code(base),
    ', such as ', code(`www.${base}`), ', with one certificate; not ',
    code(base), ' itself, nor deeper names such as ', code(`a.www.${base}`),
    '. A name you add on its own beside it gets its own certificate once it is verified.');
}

// liveNote says, for a domain that pointed here once, what its last
// checks mean for visitors and what happens next, in words: failed
// lookups change nothing; only 3 checks in a row over an hour that find
// the DNS pointing elsewhere make it Moved; a moved domain keeps its
// certificate until it expires and comes back by itself.
export function liveNote(d) {
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

// ownedNote says where an owned domain stands in a move without
// downtime: its certificate is being obtained, is ready (switch when you
// are ready), or waits for the _acme-challenge record.
function ownedNote(d) {
  if (d.state !== 'owned') return null;
  const c = d.certificate || {};
  const delegated = d.delegation && d.delegation.delegated;
  let text;
  if (c.state === 'issued' || c.state === 'renewing') {
    text = ['Certificate ready: switch your CNAME when you are ready. ', d.name, ' is served over HTTPS with it from the first visitor on',
      c.notAfter ? [' (valid until ', timeEl(c.notAfter), ', renewed by itself)'] : '', '. After the switch, choose Verify, or wait for the next check',
      d.nextCheckAt ? [' at ', timeEl(d.nextCheckAt)] : '', '.'];
  } else if (!delegated) {
    text = ['Ownership proven. Create the _acme-challenge record below too, so that the certificate is obtained before you switch; then choose Verify.'];
  } else if (c.state === 'failed') {
    text = ['Ownership proven, but the certificate could not be obtained yet; see the certificate below. Do not switch your CNAME until it is ready.'];
  } else {
    text = ['Ownership proven: the certificate is being obtained. Keep your CNAME where it is until it is ready.'];
  }
  return el('p', { className: 'live-note live-note-owned' }, ...text.flat(2));
}

function recordsSection(d) {
  const records = (d.records || []).filter((r) => !r.purpose);
  const move = (d.records || []).filter((r) => r.purpose);
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
    move.length ? el('h5', { textContent: 'Move a live domain without downtime' }) : null,
    move.length ? el('p', { className: 'help', textContent: 'Is the domain live elsewhere? Create these two records first and keep the CNAME above where it is: once they are found, the certificate is obtained here, and you switch the CNAME when it is ready, with no gap for visitors.' }) : null,
    move.map((r, i) => recordCard(d, r, `d${i}`)),
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
  // A certificate in use keeps its state when a renewal fails: the error
  // says that it does not renew by itself as the text above says.
  const renewalError = c.error && c.state !== 'failed'
    ? el('p', { className: 'cert-error' }, 'The last renewal attempt failed',
      c.lastAttempt && c.lastAttempt.at ? [' at ', timeEl(c.lastAttempt.at)] : '', `: ${sentence(c.error)}`)
    : null;
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
    renewalError,
    details.length ? el('ul', { className: 'certificate-details' }, ...details) : null,
  );
}
