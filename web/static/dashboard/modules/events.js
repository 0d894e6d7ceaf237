// The Events view: the events the service recorded, newest first, from
// both lists (the store's and the administration's), read again every few
// seconds from where the last read ended.

import { ApiError, apiPage } from './api.js';
import { $, el, timeEl } from './dom.js';
import { showError } from './feedback.js';
import { refreshWhileShown } from './state.js';

const REFRESH_MS = 3000;
// KEEP is how many events the view shows; PAGES how many pages of a list
// one read follows, so that a long history is read over several refreshes
// rather than all at once.
const KEEP = 200;
const PAGES = 20;

const LISTS = ['/events', '/admin/events'];
const read = { cursors: {}, events: [] };

export async function loadEvents() {
  read.cursors = {};
  read.events = [];
  await readNew();
  draw();
  refreshWhileShown('events', REFRESH_MS, async () => {
    if (await readNew()) draw();
    else drawUpdated();
  }, showError);
}

// readNew reads each list after its cursor; it reports whether any event
// came.
async function readNew() {
  let got = false;
  for (const list of LISTS) {
    const after = read.cursors[list];
    let next = after ? `${list}?limit=100&after=${after}` : `${list}?limit=100`;
    for (let pages = 0; next && pages < PAGES; pages++) {
      let page;
      try {
        page = await apiPage(next);
      } catch (err) {
        // The cursor's events were pruned: read from the oldest kept.
        if (err instanceof ApiError && err.status === 410) {
          delete read.cursors[list];
          break;
        }
        throw err;
      }
      if (page.data.length) {
        got = true;
        read.cursors[list] = page.data[page.data.length - 1].id;
        read.events.push(...page.data);
      }
      next = page.next;
    }
  }
  if (got) {
    // Ids sort as the events were recorded.
    read.events.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    read.events.length = Math.min(read.events.length, KEEP);
  }
  return got;
}

function drawUpdated() {
  $('events-updated').replaceChildren('Read ', timeEl(new Date().toISOString()), '; read again every few seconds while this view is open.');
}

function draw() {
  const rows = read.events.map((e) => {
    const kind = e.type.split('.')[0];
    let data = JSON.stringify(e.data);
    if (data.length > 160) data = `${data.slice(0, 159)}…`;
    return el('tr', { 'data-event': e.id },
      el('td', { className: 'event-time' }, timeEl(e.createdAt)),
      el('td', {}, el('code', { className: `event-type kind-${kind}`, textContent: e.type })),
      el('td', {}, el('code', { className: 'event-data', textContent: data, title: JSON.stringify(e.data, null, 2) })),
      el('td', {}, el('span', { className: 'event-id', textContent: e.id })),
    );
  });
  $('events').tBodies[0].replaceChildren(...rows);
  $('events').hidden = rows.length === 0;
  $('events-empty').hidden = rows.length !== 0;
  drawUpdated();
}
