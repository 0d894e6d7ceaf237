// The admin token: kept in this tab's sessionStorage, and forgotten on
// sign-out.

import { onUnauthorized } from './api.js';
import { $ } from './dom.js';
import { state, stopAllRefreshes } from './state.js';

const TOKEN_KEY = 'petstore.adminToken';

export function loadToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function saveToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage off: the token lives in memory until reload */ }
}

export function showSignIn(message) {
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

export function signOut(message) {
  state.token = '';
  saveToken('');
  stopAllRefreshes();
  state.project = null;
  showSignIn(message);
}

onUnauthorized(signOut);
