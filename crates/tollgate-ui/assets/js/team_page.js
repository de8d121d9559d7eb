// One team's page (#/teams/<team_id>): GET /team/info, its spend against its budget, and its
// members with their role and member budget / spend in the team (`members_with_roles` joined
// with `team_memberships`); admins add members (POST /team/member_add by user_id or e-mail,
// role admin or user, max_budget_in_team), change a role or member budget
// (/team/member_update) and remove members (/team/member_delete). Members may read their team.

import { canWrite, get, post } from './api.js';
import { announce, dataTable, errorBox, fill, field, h, heading, select, statusBadge, usd } from './dom.js';
import { confirmed, formDialog, numberOf, str } from './form_dialog.js';

const MEMBER_ROLES = [['user', 'User'], ['admin', 'Admin']];
const COLS = [['User ID'], ['E-mail'], ['Role'], ['Spend in team (USD)', true], ['Budget in team (USD)', true], ['Actions']];

/** Opens the role / member budget dialog of member `m` (its `tier` is its membership's tier). */
function openMemberForm(opener, teamId, m, reload) {
  const [roleField, role] = select('member-role', 'Role in team', MEMBER_ROLES, m.role ?? 'user');
  const [budgetField, budget] = field('member-budget-edit', 'Max budget in team (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(m.tier.max_budget) }, 'empty = unchanged');
  formDialog({
    id: 'member-dialog',
    title: `Member ${m.user_id ?? m.user_email}`,
    fields: [[roleField, role], [budgetField, budget]],
    submitLabel: 'Save member',
    opener,
    onSubmit: async () => {
      const body = { team_id: teamId, role: role.value };
      if (m.user_id) body.user_id = m.user_id;
      else body.user_email = m.user_email;
      const b = numberOf(budget);
      if (b !== undefined) body.max_budget_in_team = b;
      await post('/team/member_update', body);
      announce(`Member ${m.user_id ?? m.user_email} saved.`);
      return reload;
    },
  });
}

function memberRow(m, teamId, session, errors, reload) {
  const who = m.user_id ?? m.user_email;
  return h('tr', { 'data-member': who },
    h('td', { class: 'secret' }, m.user_id ?? '—'),
    h('td', {}, m.user_email ?? '—'),
    h('td', {}, m.role ?? 'user'),
    h('td', { class: 'num', 'data-usd': String(m.spend ?? '') }, usd(m.spend)),
    h('td', { class: 'num' }, usd(m.tier.max_budget)),
    canWrite(session)
      ? h('td', {}, h('div', { class: 'actions' },
        h('button', { type: 'button', 'aria-label': `Edit member ${who}`, onclick: (ev) => openMemberForm(ev.currentTarget, teamId, m, reload) }, 'Edit'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Remove member ${who}`,
          onclick: () => confirmed(`Remove ${who} from the team?`, async () => {
            await post('/team/member_delete', m.user_id ? { team_id: teamId, user_id: m.user_id } : { team_id: teamId, user_email: m.user_email });
            announce(`Member ${who} removed.`);
          }, errors, reload),
        }, 'Remove')))
      : null);
}

/** The add-member form (admins). */
function addForm(teamId, errors, reload) {
  const [idField, id] = field('member-user-id', 'User ID', { autocomplete: 'off' }, 'or an e-mail below');
  const [emailField, email] = field('member-email', 'E-mail', { type: 'email', autocomplete: 'off' }, 'a new user is created when unknown');
  const [roleField, role] = select('member-new-role', 'Role in team', MEMBER_ROLES);
  const [budgetField, budget] = field('member-budget', 'Max budget in team (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal' }, 'empty = none');
  return h('form', {
    class: 'panel', 'aria-labelledby': 'member-add-title',
    onsubmit: async (ev) => {
      ev.preventDefault();
      errors.replaceChildren();
      const member = { role: role.value };
      if (id.value.trim()) member.user_id = id.value.trim();
      if (email.value.trim()) member.user_email = email.value.trim();
      const body = { team_id: teamId, member };
      const b = numberOf(budget);
      if (b !== undefined) body.max_budget_in_team = b;
      try {
        await post('/team/member_add', body);
        announce(`Member ${member.user_id ?? member.user_email} added.`);
        await reload();
        document.getElementById('member-user-id')?.focus();
      } catch (e) {
        errors.append(errorBox(e));
      }
    },
  }, h('h2', { id: 'member-add-title' }, 'Add a member'),
  h('div', { class: 'grid' }, idField, emailField, roleField, budgetField),
  h('button', { type: 'submit', class: 'primary' }, 'Add member'));
}

/** Renders the team `teamId` into `main`. */
export async function teamPage(main, session, teamId) {
  const data = await get('/team/info', { team_id: teamId });
  const t = data.team_info;
  const errors = h('div', { id: 'team-errors', 'aria-live': 'polite' });
  const reload = async () => {
    try {
      await teamPage(main, session, teamId);
    } catch (e) {
      errors.append(errorBox(e));
    }
  };
  const byUser = new Map((data.team_memberships ?? []).map((ms) => [ms.user_id, ms]));
  const members = (t.members_with_roles ?? []).map((m) => {
    const ms = byUser.get(m.user_id) ?? {};
    return { ...m, spend: ms.spend, tier: ms.litellm_budget_table ?? {} };
  });
  fill(main,
    h('p', {}, h('a', { href: '#/teams' }, '← Teams')),
    heading(`Team ${t.team_alias ?? t.team_id}`),
    h('section', { class: 'panel', 'aria-labelledby': 'team-spend-title' },
      h('h2', { id: 'team-spend-title' }, 'Spend'),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Team ID'), h('dd', { class: 'secret' }, t.team_id),
        h('dt', {}, 'Status'), h('dd', { id: 'team-status' }, statusBadge(t)),
        h('dt', {}, 'Spend (USD)'), h('dd', { id: 'team-spend', 'data-usd': String(t.spend) }, usd(t.spend)),
        h('dt', {}, 'Max budget (USD)'), h('dd', {}, usd(t.max_budget)),
        h('dt', {}, 'Keys'), h('dd', {}, String((data.keys ?? []).length)))),
    h('h2', { id: 'members-title' }, 'Members'),
    errors,
    h('div', { class: 'table-wrap' },
      dataTable('Team members', canWrite(session) ? COLS : COLS.slice(0, -1),
        members.map((m) => memberRow(m, teamId, session, errors, reload)), 'No members yet.')),
    canWrite(session) ? addForm(teamId, errors, reload) : null);
}
