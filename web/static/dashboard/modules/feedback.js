// What the dashboard tells the operator: errors in words, beside the field
// they are about; form submissions; copy buttons; the confirmation dialog.

import { ApiError, NetworkError } from './api.js';
import { $, announce, el } from './dom.js';

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

export function sentence(s) {
  s = s.trim();
  if (!s) return s;
  s = s[0].toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export function showError(err, box) {
  const target = box || $('app-error');
  target.replaceChildren(...errorContent(err));
  target.hidden = false;
  return target;
}

export function clearError(box) {
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
export function fieldError(input, err) {
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
export function clearFieldErrors(form) {
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

// saving runs save with the form's submit button disabled, and says in
// status (and to screen readers, as done) how it went; a refusal shows
// beside the field fieldOf(err) names.
export async function saving(e, status, done, save, fieldOf) {
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

// onNameSubmit runs a form of one name field: an empty name gets hint;
// otherwise post(name) runs with the submit button disabled, the field is
// emptied and done(result) follows. refocusOnError puts the caret back in
// the field after a failure, for a name the user is likely to correct.
export function onNameSubmit({ form, field, hint, post, done, refocusOnError = false }) {
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

// ---- copy buttons and the confirmation dialog -------------------------------

export function copyButton(text, label, key) {
  const b = el('button', { type: 'button', className: 'button button-quiet button-small copy', textContent: 'Copy', 'aria-label': label, 'data-copy-key': key });
  b.addEventListener('click', () => copyText(text, b));
  return b;
}

export async function copyText(text, button) {
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

// settleConfirm answers the last confirmation, until its close event comes.
let settleConfirm = null;

export function confirmAction({ title, text, ok }) {
  const dialog = $('confirm');
  // The close event comes in a task of its own, which a click may overtake
  // (a busy browser runs input first): the confirmation closed takes its
  // answer now, and its event, coming while this one is open, is ignored.
  if (settleConfirm) settleConfirm();
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = ok;
  const opener = document.activeElement;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    const onClose = () => { if (!dialog.open) settleConfirm(); };
    settleConfirm = () => {
      settleConfirm = null;
      dialog.removeEventListener('close', onClose);
      const yes = dialog.returnValue === 'ok';
      if (!yes && opener && document.contains(opener)) opener.focus();
      resolve(yes);
    };
    dialog.addEventListener('close', onClose);
  });
}
