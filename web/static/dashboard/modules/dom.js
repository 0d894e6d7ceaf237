// Small DOM helpers, shared by every view.


export const $ = (id) => document.getElementById(id);

// ---- small DOM helpers -------------------------------------------------

// el builds an element: attrs are properties (className, textContent,
// hidden...) or, for names with a dash or "aria"/"role", attributes.
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.includes('-') || k === 'role' || k === 'for') node.setAttribute(k, v === true ? '' : String(v));
    else node[k] = v;
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function code(text) { return el('code', { textContent: text }); }

function timeText(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function timeEl(iso) { return el('time', { dateTime: iso, textContent: timeText(iso) }); }

// domId makes an element id from a domain name.
export function domId(prefix, name) { return `${prefix}-${name.replace(/[^a-zA-Z0-9-]/g, '_')}`; }

export function announce(text) {
  const a = $('announcer');
  a.textContent = '';
  // A new node each time makes screen readers read a repeated message.
  window.setTimeout(() => { a.textContent = text; }, 30);
}
