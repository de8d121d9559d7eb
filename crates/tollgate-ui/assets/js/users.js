// The internal users page (#/users): GET /user/list with its server-side paging and its
// role / user id filters, create and edit (user_form.js), delete (POST /user/delete) after a
// confirm. An internal user sees only its own user (GET /user/info), without write controls.

import { canRead, canWrite, get, post } from './api.js';
import { announce, dataTable, fill, field, h, heading, reloader, select, usd } from './dom.js';
import { confirmed } from './form_dialog.js';
import { ROLES, openUserForm } from './user_form.js';

/** The list's filters and page, kept while the UI is open. */
const state = { role: '', user_ids: '', page: 1, page_size: 25 };

const COLS = [['User ID'], ['E-mail'], ['Role'], ['Spend (USD)', true], ['Budget (USD)', true], ['Budget reset'], ['Models'], ['Teams'], ['Actions']];

function userRow(u, session, errors, reload) {
  const actions = canWrite(session)
    ? [
        h('button', { type: 'button', 'aria-label': `Edit user ${u.user_id}`, onclick: (ev) => openUserForm(ev.currentTarget, reload, u) }, 'Edit'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete user ${u.user_id}`,
          onclick: () => confirmed(`Delete user ${u.user_id}? Its keys are deleted with it.`, async () => {
            await post('/user/delete', { user_ids: [u.user_id] });
            announce(`User ${u.user_id} deleted.`);
          }, errors, reload),
        }, 'Delete'),
      ]
    : [];
  return h('tr', { 'data-user': u.user_id },
    h('td', { class: 'secret' }, u.user_id),
    h('td', {}, u.user_email ?? '—'),
    h('td', {}, u.user_role ?? '—'),
    h('td', { class: 'num' }, usd(u.spend)),
    h('td', { class: 'num' }, usd(u.max_budget)),
    h('td', {}, u.budget_duration ? `every ${u.budget_duration}` : 'never'),
    h('td', {}, (u.models ?? []).length ? u.models.join(', ') : 'every model'),
    h('td', {}, (u.teams ?? []).length ? u.teams.join(', ') : '—'),
    canWrite(session) ? h('td', {}, h('div', { class: 'actions' }, actions)) : null);
}

/** The columns: without "Actions" for a session that cannot write. */
function cols(session) {
  return canWrite(session) ? COLS : COLS.slice(0, -1);
}

/** The signed-in internal user's own row (GET /user/info). */
async function ownView(main, session) {
  const data = await get('/user/info', { user_id: session.user_id });
  fill(main, heading('Your user'), h('div', { class: 'table-wrap' },
    dataTable('Your user', cols(session), [userRow(data.user_info, session, null, null)], '')));
}

/** Renders the users page into `main`. */
export async function usersView(main, session) {
  if (!canRead(session)) {
    await ownView(main, session);
    return;
  }
  const errors = h('div', { id: 'users-errors' });
  const table = h('div', { class: 'table-wrap' });
  const pager = h('div', { class: 'pager' });
  const [roleField, role] = select('users-role', 'Role', [['', 'Any role'], ...ROLES], state.role);
  const [idsField, ids] = field('users-ids', 'User IDs', { type: 'search', value: state.user_ids }, 'comma-separated, exact');
  const [sizeField, size] = select('users-size', 'Per page', [['10', '10'], ['25', '25'], ['50', '50'], ['100', '100']], String(state.page_size));

  const refresh = async () => {
    const data = await get('/user/list', state);
    const pages = Math.max(1, data.total_pages);
    fill(table, dataTable('Internal users', cols(session), data.users.map((u) => userRow(u, session, errors, load)), 'No users match.'));
    fill(pager,
      h('button', { type: 'button', disabled: state.page <= 1, onclick: () => { state.page -= 1; load(); } }, 'Previous page'),
      h('span', { id: 'users-count' }, `Page ${data.page} of ${pages} · ${data.total} users`),
      h('button', { type: 'button', disabled: state.page >= pages, onclick: () => { state.page += 1; load(); } }, 'Next page'));
  };
  const load = reloader(errors, refresh);
  const search = h('form', {
    class: 'bar', role: 'search', 'aria-label': 'Filter users',
    onsubmit: (ev) => {
      ev.preventDefault();
      Object.assign(state, { role: role.value, user_ids: ids.value.trim(), page_size: Number(size.value), page: 1 });
      load();
    },
  }, roleField, idsField, sizeField, h('button', { type: 'submit' }, 'Search'));
  const create = canWrite(session)
    ? h('button', { type: 'button', class: 'primary', id: 'create-user', onclick: (ev) => openUserForm(ev.currentTarget, load) }, 'Create user')
    : null;
  fill(main, h('div', { class: 'row' }, heading('Internal users'), create), search, errors, table, pager);
  await refresh();
}
