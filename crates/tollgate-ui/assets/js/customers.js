// The end users page (#/customers): GET /customer/list (every end user seen in traffic or
// created, with live spend and its budget tier), block / unblock (POST /customer/block,
// /customer/unblock), a budget dialog (POST /customer/update with a budget tier's budget_id or
// a max_budget) and delete (POST /customer/delete) after a confirm. Admins write, admin
// viewers read; an internal user is told the page is not theirs.

import { canRead, canWrite, get, post } from './api.js';
import { announce, dataTable, errorBox, fill, field, h, heading, select, statusBadge, usd } from './dom.js';
import { confirmed, formDialog, numberOf, str } from './form_dialog.js';

const COLS = [['End user'], ['Alias'], ['Spend (USD)', true], ['Budget (USD)', true], ['Budget tier'], ['Budget reset'], ['Status'], ['Actions']];

/** The customer's limits: its tier's (LiteLLM keeps them on `litellm_budget_table`). */
function tierOf(c) {
  return c.litellm_budget_table ?? {};
}

/** Opens the budget dialog of customer `c`: a tier from /budget/list, or its own max_budget. */
async function openBudgetForm(opener, c, reload) {
  const tiers = await get('/budget/list');
  const t = tierOf(c);
  const [tierField, tier] = select('customer-tier', 'Budget tier',
    [...(c.budget_id ? [] : [['', 'None yet']]), ...tiers.map((b) => [b.budget_id, `${b.budget_id} (${usd(b.max_budget)})`])], c.budget_id ?? '');
  const [budgetField, budget] = field('customer-budget', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(t.max_budget) },
    'sets the max budget of the end user\'s tier (shared by whatever else links it)');
  formDialog({
    id: 'customer-dialog',
    title: `Budget of end user ${c.user_id}`,
    fields: [[tierField, tier], [budgetField, budget]],
    submitLabel: 'Save budget',
    opener,
    onSubmit: async () => {
      // only what changed is sent: the API refuses a budget_id together with budget fields
      const body = { user_id: c.user_id };
      if (tier.value && tier.value !== (c.budget_id ?? '')) body.budget_id = tier.value;
      const b = numberOf(budget);
      if (b !== undefined && b !== t.max_budget) body.max_budget = b;
      await post('/customer/update', body);
      announce(`Budget of end user ${c.user_id} saved.`);
      return reload;
    },
  });
}

function customerRow(c, session, errors, reload) {
  const t = tierOf(c);
  const blockAction = c.blocked ? 'unblock' : 'block';
  const actions = canWrite(session)
    ? [
        h('button', {
          type: 'button', 'aria-label': `${c.blocked ? 'Unblock' : 'Block'} end user ${c.user_id}`,
          onclick: async () => {
            errors.replaceChildren();
            try {
              await post(`/customer/${blockAction}`, { user_ids: [c.user_id] });
              announce(`End user ${c.user_id} ${blockAction}ed.`);
              await reload();
              // the row is redrawn: the focus goes to its new block / unblock button
              document.querySelector(`tr[data-customer="${CSS.escape(c.user_id)}"] button`)?.focus();
            } catch (e) {
              errors.append(errorBox(e));
            }
          },
        }, c.blocked ? 'Unblock' : 'Block'),
        h('button', {
          type: 'button', 'aria-label': `Budget of end user ${c.user_id}`,
          onclick: async (ev) => {
            errors.replaceChildren();
            try {
              await openBudgetForm(ev.currentTarget, c, reload);
            } catch (e) {
              errors.append(errorBox(e));
            }
          },
        }, 'Budget'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete end user ${c.user_id}`,
          onclick: () => confirmed(`Delete end user ${c.user_id}? Its spend and budget link go with it.`, async () => {
            await post('/customer/delete', { user_ids: [c.user_id] });
            announce(`End user ${c.user_id} deleted.`);
          }, errors, reload),
        }, 'Delete'),
      ]
    : [];
  return h('tr', { 'data-customer': c.user_id },
    h('td', { class: 'secret' }, c.user_id),
    h('td', {}, c.alias ?? '—'),
    h('td', { class: 'num', 'data-usd': String(c.spend) }, usd(c.spend)),
    h('td', { class: 'num' }, usd(t.max_budget)),
    h('td', {}, c.budget_id ?? '—'),
    h('td', {}, t.budget_duration ? `every ${t.budget_duration}` : 'never'),
    h('td', {}, statusBadge({ blocked: c.blocked, spend: c.spend, max_budget: t.max_budget })),
    canWrite(session) ? h('td', {}, h('div', { class: 'actions' }, actions)) : null);
}

/** Renders the end users page into `main`. */
export async function customersView(main, session) {
  if (!canRead(session)) {
    fill(main, heading('End users'), h('p', {}, 'Only proxy admins and admin viewers can list end users. Your own spend is on the keys page.'));
    return;
  }
  const errors = h('div', { id: 'customers-errors' });
  const table = h('div', { class: 'table-wrap' });
  const [filterField, filter] = field('customers-filter', 'End user ID contains', { type: 'search' });
  let all = [];
  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = all.filter((c) => !q || c.user_id.toLowerCase().includes(q));
    fill(table, dataTable('End users', canWrite(session) ? COLS : COLS.slice(0, -1),
      shown.map((c) => customerRow(c, session, errors, refresh)),
      all.length ? 'No end users match.' : 'No end users yet: they appear after their first request with a "user" field.'));
  };
  const refresh = async () => {
    all = await get('/customer/list');
    draw();
  };
  filter.addEventListener('input', draw);
  fill(main, heading('End users'),
    h('form', { class: 'bar', role: 'search', 'aria-label': 'Filter end users', onsubmit: (ev) => { ev.preventDefault(); draw(); } }, filterField),
    errors, table);
  await refresh();
}
