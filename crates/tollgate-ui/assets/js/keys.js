// The virtual keys page: GET /key/list with server-side filters and paging, block/unblock and
// delete per key, and the "Create key" dialog (key_form.js).

import { canWrite, get, post } from './api.js';
import { announce, errorBox, fill, field, h, heading, reloader, select, statusBadge, usd } from './dom.js';
import { openKeyForm } from './key_form.js';

/** The list's filters and page; kept while the page is open so a reload after an action keeps them. */
const state = { key_alias: '', team_id: '', user_id: '', page: 1, size: 10 };

/** Block, unblock or delete `hash`, then `refresh()`; errors go into `errors`. */
export async function keyAction(action, hash, errors, refresh) {
  errors.replaceChildren();
  try {
    if (action === 'delete') {
      if (!window.confirm('Delete this key? Requests with it are refused from then on.')) return;
      await post('/key/delete', { keys: [hash] });
      announce('Key deleted.');
    } else {
      await post(`/key/${action}`, { key: hash });
      announce(action === 'block' ? 'Key blocked.' : 'Key unblocked.');
    }
    await refresh();
  } catch (e) {
    errors.append(errorBox(e));
  }
}

function keyRow(k, session, errors, refresh) {
  const name = k.key_alias || k.key_name || k.token.slice(0, 12);
  const actions = canWrite(session)
    ? [
        h('button', { type: 'button', onclick: () => keyAction(k.blocked ? 'unblock' : 'block', k.token, errors, refresh), 'aria-label': `${k.blocked ? 'Unblock' : 'Block'} key ${name}` }, k.blocked ? 'Unblock' : 'Block'),
        h('button', { type: 'button', class: 'danger', onclick: () => keyAction('delete', k.token, errors, refresh), 'aria-label': `Delete key ${name}` }, 'Delete'),
      ]
    : [];
  return h('tr', { 'data-key': k.token },
    h('td', {}, h('a', { href: `#/keys/${k.token}` }, name)),
    h('td', { class: 'secret' }, k.key_name ?? ''),
    h('td', {}, k.team_id ?? '—'),
    h('td', {}, k.user_id ?? '—'),
    h('td', { class: 'num' }, usd(k.spend)),
    h('td', { class: 'num' }, usd(k.max_budget)),
    h('td', {}, statusBadge(k)),
    h('td', {}, h('div', { class: 'actions' }, actions)));
}

/** Renders the keys page into `main`. */
export async function keysView(main, session) {
  const errors = h('div', { id: 'keys-errors' });
  const table = h('div', { class: 'table-wrap' });
  const pager = h('div', { class: 'pager' });
  const [aliasField, alias] = field('keys-alias', 'Key alias', { value: state.key_alias, type: 'search' }, 'exact');
  const [teamField, team] = field('keys-team', 'Team ID', { value: state.team_id, type: 'search' });
  const [userField, user] = field('keys-user', 'User ID', { value: state.user_id, type: 'search' });
  const [sizeField, size] = select('keys-size', 'Per page', [['10', '10'], ['25', '25'], ['50', '50'], ['100', '100']], String(state.size));

  const refresh = async () => {
    const data = await get('/key/list', { ...state, return_full_object: 'true' });
    const rows = data.keys.map((k) => keyRow(k, session, errors, load));
    fill(table, h('table', { 'aria-describedby': 'keys-count' },
      h('caption', { class: 'visually-hidden' }, 'Virtual keys'),
      h('thead', {}, h('tr', {}, ['Alias', 'Key', 'Team', 'User', 'Spend (USD)', 'Budget (USD)', 'Status', 'Actions']
        .map((t) => h('th', { scope: 'col', class: t.includes('USD') ? 'num' : '' }, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: '8' }, 'No keys match.')))));
    const pages = Math.max(1, data.total_pages);
    fill(pager,
      h('button', { type: 'button', disabled: state.page <= 1, onclick: () => { state.page -= 1; load(); } }, 'Previous page'),
      h('span', { id: 'keys-count' }, `Page ${data.current_page} of ${pages} · ${data.total_count} keys`),
      h('button', { type: 'button', disabled: state.page >= pages, onclick: () => { state.page += 1; load(); } }, 'Next page'));
  };
  const load = reloader(errors, refresh);
  const search = h('form', {
    class: 'bar', role: 'search', 'aria-label': 'Filter keys',
    onsubmit: (ev) => {
      ev.preventDefault();
      Object.assign(state, { key_alias: alias.value.trim(), team_id: team.value.trim(), user_id: user.value.trim(), size: Number(size.value), page: 1 });
      load();
    },
  }, aliasField, teamField, userField, sizeField, h('button', { type: 'submit' }, 'Search'));
  const create = canWrite(session)
    ? h('button', { type: 'button', class: 'primary', id: 'create-key', onclick: (ev) => openKeyForm(ev.currentTarget, load) }, 'Create key')
    : null;
  fill(main, h('div', { class: 'row' }, heading('Virtual keys'), create), search, errors, table, pager);
  await refresh();
}
