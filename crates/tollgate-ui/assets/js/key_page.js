// One key's page (#/keys/<hash>): GET /key/info, its spend against its budget, limits and
// status, with edit (/key/update), regenerate (the new secret shown once), block/unblock and
// delete.

import { canWrite, get, post } from './api.js';
import { errorBox, fill, h, heading, statusBadge, usd } from './dom.js';
import { openKeyForm, showSecret } from './key_form.js';
import { keyAction } from './keys.js';

/** Replaces the key by a new secret (POST /key/regenerate), shown once; then opens its page. */
async function regenerate(hash, errors) {
  errors.replaceChildren();
  if (!window.confirm('Regenerate this key? The current secret stops working at once.')) return;
  try {
    const created = await post('/key/regenerate', { key: hash });
    showSecret(created, () => { location.hash = `#/keys/${created.token_id}`; });
  } catch (e) {
    errors.append(errorBox(e));
  }
}

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
  // After an action the page is drawn again; the focus goes to its heading, not to a
  // button that no longer exists.
  const reload = async () => {
    await keyPage(main, session, hash);
    document.getElementById('page-title')?.focus();
  };
  const over = typeof k.max_budget === 'number' && k.spend >= k.max_budget;
  const actions = canWrite(session)
    ? h('div', { class: 'row' },
      h('button', { type: 'button', onclick: (ev) => openKeyForm(ev.currentTarget, reload, { ...k, hash: data.key }) }, 'Edit key'),
      h('button', { type: 'button', onclick: () => regenerate(data.key, errors) }, 'Regenerate key'),
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
