// One key's page (#/keys/<hash>): GET /key/info, its spend against its budget, limits and
// status, with block/unblock and delete.

import { canWrite, get } from './api.js';
import { fill, h, heading, statusBadge, usd } from './dom.js';
import { keyAction } from './keys.js';

function fact(label, value, attrs = {}) {
  return [h('dt', {}, label), h('dd', attrs, value ?? '—')];
}

function list(v) {
  return Array.isArray(v) && v.length ? v.join(', ') : 'every model';
}

/** Renders the key with hash `hash` into `main`. */
export async function keyPage(main, session, hash) {
  const data = await get('/key/info', { key: hash });
  const k = data.info;
  const errors = h('div', { id: 'key-errors' });
  if (k.status === 'deleted') {
    fill(main, heading('Deleted key'), h('p', {}, `The key ${data.key} was deleted.`), h('a', { href: '#/keys' }, 'Back to virtual keys'));
    return;
  }
  const name = k.key_alias || k.key_name || data.key.slice(0, 12);
  const reload = () => keyPage(main, session, hash);
  const over = typeof k.max_budget === 'number' && k.spend >= k.max_budget;
  const actions = canWrite(session)
    ? h('div', { class: 'row' },
      h('button', { type: 'button', onclick: () => keyAction(k.blocked ? 'unblock' : 'block', data.key, errors, reload) }, k.blocked ? 'Unblock key' : 'Block key'),
      h('button', { type: 'button', class: 'danger', onclick: () => keyAction('delete', data.key, errors, async () => { location.hash = '#/keys'; }) }, 'Delete key'))
    : null;
  fill(main,
    h('p', {}, h('a', { href: '#/keys' }, '← Virtual keys')),
    heading(`Key ${name}`),
    errors,
    h('section', { class: 'panel', 'aria-labelledby': 'key-spend-title' },
      h('h2', { id: 'key-spend-title' }, 'Spend'),
      h('dl', { class: 'facts' },
        fact('Status', statusBadge(k), { id: 'key-status' }),
        fact('Spend (USD)', usd(k.spend), { id: 'key-spend', 'data-usd': String(k.spend) }),
        fact('Max budget (USD)', usd(k.max_budget), { id: 'key-max-budget', 'data-usd': String(k.max_budget ?? '') }),
        fact('Budget resets', k.budget_duration ? `every ${k.budget_duration}${k.budget_reset_at ? `, next ${k.budget_reset_at}` : ''}` : 'never'),
        over ? fact('Refusals', 'New requests are refused: the key is over its budget.', { id: 'key-refusal' }) : [])),
    h('section', { class: 'panel', 'aria-labelledby': 'key-details-title' },
      h('h2', { id: 'key-details-title' }, 'Details'),
      h('dl', { class: 'facts' },
        fact('Key', k.key_name, { class: 'secret' }),
        fact('Hash', data.key, { class: 'secret' }),
        fact('Alias', k.key_alias),
        fact('Team', k.team_id),
        fact('User', k.user_id),
        fact('Models', list(k.models)),
        fact('Tokens per minute', k.tpm_limit),
        fact('Requests per minute', k.rpm_limit),
        fact('Expires', k.expires ?? 'never'),
        fact('Created', k.created_at))),
    actions);
}
