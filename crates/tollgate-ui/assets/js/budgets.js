// The budget tiers page (#/budgets): GET /budget/list, create (POST /budget/new) and edit
// (POST /budget/update) a tier's max_budget (USD), budget_duration, tpm/rpm limits and
// max_parallel_requests, delete (POST /budget/delete, refused by the API while anything links
// the tier) after a confirm. Admins write, admin viewers read.

import { canRead, canWrite, get, post } from './api.js';
import { announce, dataTable, fill, field, h, heading, reloader, select, usd } from './dom.js';
import { confirmed, durations, formDialog, numberOf, setDefined, str } from './form_dialog.js';

const COLS = [['Budget ID'], ['Max budget (USD)', true], ['Budget reset'], ['Next reset'], ['Tokens per minute', true], ['Requests per minute', true], ['Max parallel requests', true], ['Actions']];

/** Opens the create (or, with `existing`, edit) dialog. */
function openBudgetForm(opener, reload, existing = null) {
  const e = existing ?? {};
  const editing = Boolean(existing);
  const keep = editing ? 'empty = unchanged' : 'empty = no limit';
  const [idField, id] = field('budget-id', 'Budget ID', { autocomplete: 'off', value: e.budget_id ?? '', readonly: editing }, editing ? '' : 'empty = generated');
  const [maxField, max] = field('budget-max', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(e.max_budget) }, keep);
  const [durationField, duration] = select('budget-duration', 'Budget reset', durations(editing));
  const [tpmField, tpm] = field('budget-tpm', 'Tokens per minute', { type: 'number', min: '0', step: '1', value: str(e.tpm_limit) }, keep);
  const [rpmField, rpm] = field('budget-rpm', 'Requests per minute', { type: 'number', min: '0', step: '1', value: str(e.rpm_limit) }, keep);
  const [parField, par] = field('budget-parallel', 'Max parallel requests', { type: 'number', min: '0', step: '1', value: str(e.max_parallel_requests) }, keep);
  formDialog({
    id: 'budget-dialog',
    title: editing ? `Edit budget tier ${e.budget_id}` : 'Create a budget tier',
    fields: [[idField, id], [maxField, max], [durationField, duration], [tpmField, tpm], [rpmField, rpm], [parField, par]],
    submitLabel: editing ? 'Save changes' : 'Create budget tier',
    opener,
    onSubmit: async () => {
      const body = setDefined({}, [
        ['budget_id', editing ? e.budget_id : id.value.trim() || undefined],
        ['max_budget', numberOf(max)],
        ['budget_duration', duration.value || undefined],
        ['tpm_limit', numberOf(tpm)],
        ['rpm_limit', numberOf(rpm)],
        ['max_parallel_requests', numberOf(par)],
      ]);
      const t = await post(editing ? '/budget/update' : '/budget/new', body);
      announce(`Budget tier ${t.budget_id} ${editing ? 'updated' : 'created'}.`);
      return reload;
    },
  });
}

function budgetRow(b, session, errors, reload) {
  const n = (v) => (typeof v === 'number' ? String(v) : '—');
  return h('tr', { 'data-budget': b.budget_id },
    h('td', { class: 'secret' }, b.budget_id),
    h('td', { class: 'num' }, usd(b.max_budget)),
    h('td', {}, b.budget_duration ? `every ${b.budget_duration}` : 'never'),
    h('td', {}, b.budget_reset_at ?? '—'),
    h('td', { class: 'num' }, n(b.tpm_limit)),
    h('td', { class: 'num' }, n(b.rpm_limit)),
    h('td', { class: 'num' }, n(b.max_parallel_requests)),
    canWrite(session)
      ? h('td', {}, h('div', { class: 'actions' },
        h('button', { type: 'button', 'aria-label': `Edit budget tier ${b.budget_id}`, onclick: (ev) => openBudgetForm(ev.currentTarget, reload, b) }, 'Edit'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete budget tier ${b.budget_id}`,
          onclick: () => confirmed(`Delete budget tier ${b.budget_id}?`, async () => {
            await post('/budget/delete', { id: b.budget_id });
            announce(`Budget tier ${b.budget_id} deleted.`);
          }, errors, reload),
        }, 'Delete')))
      : null);
}

/** Renders the budget tiers page into `main`. */
export async function budgetsView(main, session) {
  if (!canRead(session)) {
    fill(main, heading('Budget tiers'), h('p', {}, 'Only proxy admins and admin viewers can list budget tiers. Your keys\' budgets are on the keys page.'));
    return;
  }
  const errors = h('div', { id: 'budgets-errors' });
  const table = h('div', { class: 'table-wrap' });
  const refresh = async () => {
    const tiers = await get('/budget/list');
    fill(table, dataTable('Budget tiers', canWrite(session) ? COLS : COLS.slice(0, -1),
      tiers.map((b) => budgetRow(b, session, errors, load)), 'No budget tiers yet.'));
  };
  const load = reloader(errors, refresh);
  const create = canWrite(session)
    ? h('button', { type: 'button', class: 'primary', id: 'create-budget', onclick: (ev) => openBudgetForm(ev.currentTarget, load) }, 'Create budget tier')
    : null;
  fill(main, h('div', { class: 'row' }, heading('Budget tiers'), create),
    h('p', { class: 'hint' }, 'A tier\'s limits apply to every key, end user, team member and tag linked to it.'),
    errors, table);
  await refresh();
}
