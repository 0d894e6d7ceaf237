// The operator's dashboard. It is a client of the admin API and nothing
// more: every value it shows comes from the API, every change goes through
// it. The admin token lives in sessionStorage (this tab only) and travels
// only as an Authorization header; no cookie is ever set, so no other site
// can make the browser act with it (no CSRF).
//
// All text from the API is put in the page with textContent, never parsed as
// HTML.
//
// This is the entry module: sign-in, the views and the start. Each view
// lives in a module of its own under modules/, which the server serves
// under fixed names, revalidated on each load (this file is the one named
// by the hash of its content).

import { api, ApiError } from './modules/api.js';
import { $ } from './modules/dom.js';
import { loadDomains } from './modules/domain-actions.js';
import { loadEvents } from './modules/events.js';
import { clearError, showError } from './modules/feedback.js';
import { loadKeys } from './modules/keys.js';
import { loadProject, showProjectName } from './modules/project.js';
import { loadToken, saveToken, showSignIn, signOut } from './modules/session.js';
import { state, stopAllRefreshes } from './modules/state.js';
import { loadWebhooks } from './modules/webhooks.js';

// ---- sign-in ------------------------------------------------------------

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

// ---- views ----------------------------------------------------------------

const VIEWS = { project: loadProject, 'api-keys': loadKeys, domains: loadDomains, webhooks: loadWebhooks, events: loadEvents };

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

// ---- start ---------------------------------------------------------------

state.token = loadToken();
if (!state.token) {
  showSignIn('');
} else {
  api('GET', '/admin/project').then((p) => {
    state.project = p;
    enterApp();
  }).catch((err) => {
    if (!(err instanceof ApiError && err.status === 401)) {
      showSignIn('');
      showError(err, $('sign-in-error'));
    }
  });
}
