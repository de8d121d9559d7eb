// The teams page: GET /team/list and a form for POST /team/new (alias, budget, models); each
// team links to its page (team_page.js). A member sees its own teams (GET /user/info).

import { canWrite, get, post } from './api.js';
import { announce, errorBox, fill, field, h, heading, statusBadge, usd } from './dom.js';

function teamRow(t) {
  return h('tr', { 'data-team': t.team_id },
    h('td', {}, h('a', { href: `#/teams/${encodeURIComponent(t.team_id)}` }, t.team_alias ?? t.team_id)),
    h('td', { class: 'secret' }, t.team_id),
    h('td', { class: 'num' }, usd(t.spend)),
    h('td', { class: 'num' }, usd(t.max_budget)),
    h('td', { class: 'num' }, String((t.members_with_roles ?? []).length)),
    h('td', { class: 'num' }, String((t.keys ?? []).length)),
    h('td', {}, statusBadge(t)));
}

function createForm(errors, reload) {
  const [aliasField, alias] = field('team-alias', 'Team alias', { required: true, autocomplete: 'off' });
  const [budgetField, budget] = field('team-budget', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal' });
  const [modelsField, models] = field('team-models', 'Models', { autocomplete: 'off' }, 'comma-separated; empty = every model');
  const form = h('form', {
    class: 'panel', 'aria-labelledby': 'team-new-title',
    onsubmit: async (ev) => {
      ev.preventDefault();
      errors.replaceChildren();
      const body = { team_alias: alias.value.trim() };
      if (budget.value.trim() !== '') body.max_budget = Number(budget.value);
      const m = models.value.split(',').map((s) => s.trim()).filter(Boolean);
      if (m.length) body.models = m;
      try {
        const t = await post('/team/new', body);
        announce(`Team ${t.team_alias ?? t.team_id} created.`);
        form.reset();
        await reload();
        alias.focus();
      } catch (e) {
        errors.append(errorBox(e));
      }
    },
  }, h('h2', { id: 'team-new-title' }, 'New team'), h('div', { class: 'grid' }, aliasField, budgetField, modelsField),
  h('button', { type: 'submit', class: 'primary' }, 'Create team'));
  return form;
}

/** Renders the teams page into `main`. */
export async function teamsView(main, session) {
  const errors = h('div', { id: 'teams-errors' });
  const table = h('div', { class: 'table-wrap' });
  const reload = async () => {
    const teams = await get('/team/list');
    fill(table, h('table', {},
      h('caption', { class: 'visually-hidden' }, 'Teams'),
      h('thead', {}, h('tr', {}, ['Alias', 'Team ID', 'Spend (USD)', 'Budget (USD)', 'Members', 'Keys', 'Status']
        .map((t) => h('th', { scope: 'col', class: ['Alias', 'Team ID', 'Status'].includes(t) ? '' : 'num' }, t)))),
      h('tbody', {}, teams.length ? teams.map(teamRow) : h('tr', {}, h('td', { colspan: '7' }, 'No teams yet.')))));
  };
  if (canWrite(session) || session.user_role === 'proxy_admin_viewer') {
    fill(main, heading('Teams'), canWrite(session) ? createForm(errors, reload) : null, errors, table);
    await reload();
  } else {
    // a member reads its own teams (GET /user/info lists them), each on its page
    const own = (await get('/user/info', { user_id: session.user_id })).teams ?? [];
    fill(main, heading('Teams'), h('p', {}, 'Only proxy admins and admin viewers can list every team. Your teams:'),
      own.length
        ? h('ul', {}, own.map((t) => h('li', {}, h('a', { href: `#/teams/${encodeURIComponent(t.team_id)}` }, t.team_alias ?? t.team_id))))
        : h('p', {}, 'You are not a member of any team.'));
  }
}
