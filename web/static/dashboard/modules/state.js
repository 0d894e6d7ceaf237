// The state of the session, shared by every view, and the timers of the
// refreshes under way. The lowest layer with dom.js: it imports nothing.

export const state = {
  token: '',
  project: null,
  domains: [], // in the API's order
  settings: null,
  timers: new Map(), // domain name, or a view's own key -> timeout of its next refresh
  busy: new Map(), // domain name -> 'verify' or 'remove' while under way
  cardErrors: new Map(), // domain name -> the error of its last action
  view: '',
};

// stopAllRefreshes cancels every refresh scheduled: on a change of view
// and on sign-out.
export function stopAllRefreshes() {
  for (const t of state.timers.values()) window.clearTimeout(t);
  state.timers.clear();
}

// refreshWhileShown runs work in ms, and again after each run, as long as
// view is the one shown and the operator is signed in; an error of work
// goes to onError and the refreshes go on.
export function refreshWhileShown(view, ms, work, onError) {
  const t = state.timers.get(view);
  if (t) window.clearTimeout(t);
  state.timers.set(view, window.setTimeout(async () => {
    state.timers.delete(view);
    if (state.view !== view || !state.token) return;
    try {
      await work();
    } catch (err) {
      onError(err);
    }
    if (state.view === view && state.token) refreshWhileShown(view, ms, work, onError);
  }, ms));
}
