// Small DOM helpers: elements built with textContent only (never innerHTML of API data).

/** `<tag attrs>children</tag>`; attrs: `on*` functions become listeners, `false`/null are skipped. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces `el`'s children. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

const usdFormat = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});

/** USD as shown everywhere: `$0.05`, `$0.012345` (up to 6 decimals); `—` for none. */
export function usd(n) {
  return typeof n === 'number' && Number.isFinite(n) ? usdFormat.format(n) : '—';
}

/** A labelled input in a `.field`; returns `[wrapper, input]`. */
export function field(id, label, attrs = {}, hint = '') {
  const input = h('input', { id, name: id, ...attrs });
  const hintEl = hint ? h('span', { class: 'hint', id: `${id}-hint` }, ` ${hint}`) : null;
  if (hintEl) input.setAttribute('aria-describedby', `${id}-hint`);
  return [h('div', { class: 'field' }, h('label', { for: id }, label, hintEl), input), input];
}

/** A labelled select with `[value, text]` options; returns `[wrapper, select]`. */
export function select(id, label, options, value = '') {
  const s = h('select', { id, name: id }, options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)));
  return [h('div', { class: 'field' }, h('label', { for: id }, label), s), s];
}

/** The live region's text (read out by screen readers). */
export function announce(text) {
  const s = document.getElementById('status');
  if (s) s.textContent = text;
}

/** An error box (role=alert) showing `err`'s message in words. */
export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert' }, err?.message ?? String(err));
}

/**
 * A page's reload: clears `errors`, runs `refresh()`, and shows its error in `errors` instead
 * of throwing (what the row actions and dialogs call after a change).
 */
export function reloader(errors, refresh) {
  return async () => {
    errors.replaceChildren();
    try {
      await refresh();
    } catch (e) {
      errors.append(errorBox(e));
    }
  };
}

/** The status badge of a key or team: blocked, over budget, expired or active. */
export function statusBadge(row) {
  if (row.blocked) return h('span', { class: 'badge bad', 'data-status': 'blocked' }, 'Blocked');
  if (typeof row.max_budget === 'number' && typeof row.spend === 'number' && row.spend >= row.max_budget) {
    return h('span', { class: 'badge bad', 'data-status': 'over-budget' }, 'Over budget');
  }
  if (row.expires && Date.parse(row.expires) <= Date.now()) {
    return h('span', { class: 'badge muted', 'data-status': 'expired' }, 'Expired');
  }
  return h('span', { class: 'badge ok', 'data-status': 'active' }, 'Active');
}

/** The page's heading, focused after navigation so keyboard and screen-reader users land on it. */
export function heading(text) {
  return h('h1', { tabindex: '-1', id: 'page-title' }, text);
}

/** A table with a hidden `caption`, `cols` (`[title, numeric]`) and `rows`; `empty` when none. */
export function dataTable(caption, cols, rows, empty) {
  return h('table', {},
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, cols.map(([t, n]) => h('th', { scope: 'col', class: n ? 'num' : '' }, t)))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: String(cols.length) }, empty))));
}

/** A labelled checkbox in a `.field`; returns `[wrapper, input]`. */
export function checkbox(id, label, checked = false) {
  const input = h('input', { id, name: id, type: 'checkbox', class: 'check', checked });
  return [h('div', { class: 'field check-field' }, input, h('label', { for: id }, label)), input];
}
