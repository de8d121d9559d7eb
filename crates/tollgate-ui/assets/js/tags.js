// The tags page (#/tags): GET /tag/list with each tag's live spend and budget (its linked
// tier), create (POST /tag/new) and edit (POST /tag/update) description, models, max_budget
// (USD) and budget_duration, delete (POST /tag/delete) after a confirm. Requests carry a tag in
// `tags`, `metadata.tags` or the `x-litellm-tags` header. Admins write, admin viewers read.

import { canRead, canWrite, get, post } from './api.js';
import { announce, dataTable, fill, field, h, heading, reloader, select, statusBadge, usd } from './dom.js';
import { confirmed, durations, formDialog, listOf, numberOf, setDefined, str } from './form_dialog.js';

const COLS = [['Tag'], ['Description'], ['Models'], ['Spend (USD)', true], ['Budget (USD)', true], ['Budget reset'], ['Status'], ['Actions']];

/** Opens the create (or, with `existing`, edit) dialog. */
function openTagForm(opener, reload, existing = null) {
  const e = existing ?? {};
  const t = e.litellm_budget_table ?? {};
  const editing = Boolean(existing);
  const [nameField, name] = field('tag-name', 'Tag name', { autocomplete: 'off', required: true, value: e.name ?? '', readonly: editing });
  const [descField, desc] = field('tag-description', 'Description', { autocomplete: 'off', value: e.description ?? '' });
  const [modelsField, models] = field('tag-models', 'Models', { autocomplete: 'off', value: (e.models ?? []).join(', ') }, 'comma-separated; empty = every model');
  const [budgetField, budget] = field('tag-budget', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(t.max_budget) }, editing ? 'empty = unchanged' : 'empty = no budget');
  const [durationField, duration] = select('tag-duration', 'Budget reset', durations(editing));
  formDialog({
    id: 'tag-dialog',
    title: editing ? `Edit tag ${e.name}` : 'Create a tag',
    fields: [[nameField, name], [descField, desc], [modelsField, models], [budgetField, budget], [durationField, duration]],
    submitLabel: editing ? 'Save changes' : 'Create tag',
    opener,
    onSubmit: async () => {
      const m = listOf(models);
      const body = setDefined({ name: name.value.trim() }, [
        ['description', desc.value.trim() || (editing ? '' : undefined)],
        ['models', m.length || editing ? m : undefined],
        ['max_budget', numberOf(budget)],
        ['budget_duration', duration.value || undefined],
      ]);
      const out = await post(editing ? '/tag/update' : '/tag/new', body);
      announce(out.message ?? `Tag ${body.name} saved.`);
      return reload;
    },
  });
}

function tagRow(tag, session, errors, reload) {
  const t = tag.litellm_budget_table ?? {};
  return h('tr', { 'data-tag': tag.name },
    h('td', {}, tag.name),
    h('td', {}, tag.description || '—'),
    h('td', {}, (tag.models ?? []).length ? tag.models.join(', ') : 'every model'),
    h('td', { class: 'num', 'data-usd': String(tag.spend) }, usd(tag.spend)),
    h('td', { class: 'num' }, usd(t.max_budget)),
    h('td', {}, t.budget_duration ? `every ${t.budget_duration}` : 'never'),
    h('td', {}, statusBadge({ spend: tag.spend, max_budget: t.max_budget })),
    canWrite(session)
      ? h('td', {}, h('div', { class: 'actions' },
        h('button', { type: 'button', 'aria-label': `Edit tag ${tag.name}`, onclick: (ev) => openTagForm(ev.currentTarget, reload, tag) }, 'Edit'),
        h('button', {
          type: 'button', class: 'danger', 'aria-label': `Delete tag ${tag.name}`,
          onclick: () => confirmed(`Delete tag ${tag.name}? Requests carrying it are no longer limited by its budget.`, async () => {
            const out = await post('/tag/delete', { name: tag.name });
            announce(out.message ?? `Tag ${tag.name} deleted.`);
          }, errors, reload),
        }, 'Delete')))
      : null);
}

/** Renders the tags page into `main`. */
export async function tagsView(main, session) {
  if (!canRead(session)) {
    fill(main, heading('Tags'), h('p', {}, 'Only proxy admins and admin viewers can list tags.'));
    return;
  }
  const errors = h('div', { id: 'tags-errors' });
  const table = h('div', { class: 'table-wrap' });
  const refresh = async () => {
    const tags = await get('/tag/list');
    fill(table, dataTable('Tags', canWrite(session) ? COLS : COLS.slice(0, -1),
      tags.map((t) => tagRow(t, session, errors, load)), 'No tags yet.'));
  };
  const load = reloader(errors, refresh);
  const create = canWrite(session)
    ? h('button', { type: 'button', class: 'primary', id: 'create-tag', onclick: (ev) => openTagForm(ev.currentTarget, load) }, 'Create tag')
    : null;
  fill(main, h('div', { class: 'row' }, heading('Tags'), create), errors, table);
  await refresh();
}
