// The Project view: name, plan and the deploys.

import { api, state } from './api.js';
import { $, el, timeEl } from './dom.js';
import { clearError, clearFieldErrors, fieldError, saving } from './feedback.js';

// ---- project ----------------------------------------------------------------

// buildEl shows the binary a deploy started: its module version, and the
// start of its git revision with the whole of it on hover.
function buildEl(b) {
  if (!b) return document.createTextNode('—');
  const version = el('span', { textContent: b.version });
  if (!b.revision) return version;
  const rev = b.revision.slice(0, 12) + (b.modified ? ' (modified)' : '');
  return el('span', {}, version, ' ', el('code', { textContent: rev, title: `${b.revision} ${b.time || ''} ${b.goVersion}`.trim() }));
}

export async function loadProject() {
  const p = await api('GET', '/admin/project');
  state.project = p;
  showProjectName();
  $('project-name').value = p.name;
  $('project-plan').value = p.plan;
  $('project-address').textContent = p.defaultAddress;
  $('project-slug').textContent = p.slug;
  const rows = (p.deploys || []).map((d) => el('tr', {},
    el('td', {}, timeEl(d.at)),
    el('td', { textContent: d.version }),
    el('td', {}, buildEl(d.build)),
    el('td', {}, el('span', { className: `pill pill-${d.status === 'succeeded' ? 'ok' : 'bad'}`, textContent: d.status })),
    el('td', {}, el('code', { textContent: d.specSha256.slice(0, 12), title: d.specSha256 })),
  ));
  if (rows.length === 0) rows.push(el('tr', {}, el('td', { colSpan: 5, textContent: 'No deploy yet.' })));
  $('deploys').tBodies[0].replaceChildren(...rows);
}

$('project-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const status = $('project-status');
  status.textContent = '';
  clearError();
  clearFieldErrors(e.target);
  const name = $('project-name').value.trim();
  const plan = $('project-plan').value;
  if (!name) {
    fieldError($('project-name'), 'Give the project a name.');
    $('project-name').focus();
    return;
  }
  const patch = {};
  if (!state.project || name !== state.project.name) patch.name = name;
  if (!state.project || plan !== state.project.plan) patch.plan = plan;
  if (Object.keys(patch).length === 0) {
    status.textContent = 'Nothing to save.';
    return;
  }
  await saving(e, status, 'Project settings saved.', async () => {
    state.project = await api('PATCH', '/admin/project', patch);
    showProjectName();
    $('project-plan').value = state.project.plan;
  }, (err) => $(/\bplan\b/.test(err.message) ? 'project-plan' : 'project-name'));
});

export function showProjectName() {
  $('session-project').textContent = state.project ? state.project.name : '';
}
