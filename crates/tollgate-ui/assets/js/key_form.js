// The "Create key" dialog: POST /key/generate with models, max_budget, budget_duration,
// tpm/rpm limits and team; the new secret is shown once, then never again.

import { get, post } from './api.js';
import { announce, errorBox, field, h, select } from './dom.js';

const DURATIONS = [['', 'No reset'], ['1h', 'Every hour'], ['1d', 'Every day'], ['7d', 'Every 7 days'], ['30d', 'Every 30 days'], ['1mo', 'Every month']];

/** A number input's value, or undefined when empty. */
function num(input) {
  return input.value.trim() === '' ? undefined : Number(input.value);
}

/**
 * The /key/generate body from the form's inputs; for an edit (`existing` set) the /key/update
 * body: an emptied budget or limit is sent as null (no limit), empty models as [] (every model).
 */
function body(f, existing) {
  const out = existing ? { key: existing.hash } : {};
  if (f.alias.value.trim()) out.key_alias = f.alias.value.trim();
  if (f.team.value && f.team.value !== existing?.team_id) out.team_id = f.team.value;
  const models = f.models.value.split(',').map((m) => m.trim()).filter(Boolean);
  if (models.length || existing) out.models = models;
  for (const [k, input] of [['max_budget', f.budget], ['tpm_limit', f.tpm], ['rpm_limit', f.rpm]]) {
    const v = num(input);
    if (v !== undefined) out[k] = v;
    else if (existing) out[k] = null;
  }
  if (f.duration.value) out.budget_duration = f.duration.value;
  return out;
}

/** Opens a dialog showing `created.key` once (after a creation or a regeneration). */
export function showSecret(created, done) {
  const dialog = h('dialog', { 'aria-labelledby': 'key-dialog-title', id: 'key-dialog' });
  document.body.append(dialog);
  dialog.addEventListener('close', () => dialog.remove());
  dialog.showModal();
  secretStep(dialog, created, done);
}

/** The step after creation: the secret, once, with a copy button. */
function secretStep(dialog, created, done) {
  const input = h('input', { id: 'new-key-secret', class: 'secret', readonly: true, value: created.key });
  const copied = h('span', { role: 'status' });
  dialog.replaceChildren(
    h('h2', { id: 'key-dialog-title' }, 'Key created'),
    h('p', {}, 'Copy this key now: it is shown only once and cannot be read back later.'),
    h('div', { class: 'field' }, h('label', { for: 'new-key-secret' }, 'Secret key'), input),
    h('div', { class: 'row' },
      h('button', { type: 'button', onclick: async () => {
        try {
          await navigator.clipboard.writeText(created.key);
          copied.textContent = 'Copied.';
        } catch {
          input.select();
          copied.textContent = 'Select the text and copy it (Ctrl+C).';
        }
      } }, 'Copy'),
      h('button', { type: 'button', class: 'primary', id: 'new-key-done', onclick: () => dialog.close() }, 'Done'),
      copied));
  input.focus();
  input.select();
  dialog.addEventListener('close', done, { once: true });
}

/** A number for an input's value ('' for none). */
function str(v) {
  return typeof v === 'number' ? String(v) : '';
}

/**
 * Opens the dialog; `opener` gets the focus back when it closes, `onDone` runs after a
 * creation or an edit. With `existing` (a /key/info `info` plus its `hash`) it edits that key.
 */
export async function openKeyForm(opener, onDone, existing = null) {
  const dialog = h('dialog', { 'aria-labelledby': 'key-dialog-title', id: 'key-dialog' });
  document.body.append(dialog);
  const errors = h('div');
  let teams = [];
  try {
    teams = await get('/team/list');
  } catch (e) {
    errors.append(errorBox(e));
  }
  const e = existing ?? {};
  const [aliasField, alias] = field('key-alias', 'Key alias', { autocomplete: 'off', value: e.key_alias ?? '' });
  const [teamField, team] = select('key-team', 'Team', [['', 'No team'], ...teams.map((t) => [t.team_id, t.team_alias ? `${t.team_alias} (${t.team_id})` : t.team_id])], e.team_id ?? '');
  const [modelsField, models] = field('key-models', 'Models', { autocomplete: 'off', value: (e.models ?? []).join(', ') }, 'comma-separated; empty = every model');
  const [budgetField, budget] = field('key-budget', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(e.max_budget) });
  const [durationField, duration] = select('key-duration', 'Budget reset', existing ? [['', 'Unchanged'], ...DURATIONS.slice(1)] : DURATIONS);
  const [tpmField, tpm] = field('key-tpm', 'Tokens per minute', { type: 'number', min: '0', step: '1', value: str(e.tpm_limit) });
  const [rpmField, rpm] = field('key-rpm', 'Requests per minute', { type: 'number', min: '0', step: '1', value: str(e.rpm_limit) });
  const f = { alias, team, models, budget, duration, tpm, rpm };
  const form = h('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      errors.replaceChildren();
      const submit = form.querySelector('button[type=submit]');
      submit.disabled = true;
      try {
        if (existing) {
          await post('/key/update', body(f, existing));
          announce('Key updated.');
          dialog.close();
          await onDone();
          return;
        }
        const created = await post('/key/generate', body(f));
        announce('Key created.');
        secretStep(dialog, created, onDone);
      } catch (err) {
        errors.append(errorBox(err));
        submit.disabled = false;
      }
    },
  },
  h('h2', { id: 'key-dialog-title' }, existing ? 'Edit key' : 'Create a virtual key'),
  errors,
  h('div', { class: 'grid' }, aliasField, teamField, modelsField, budgetField, durationField, tpmField, rpmField),
  h('div', { class: 'row' },
    h('button', { type: 'submit', class: 'primary' }, existing ? 'Save changes' : 'Create key'),
    h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel')));
  dialog.append(form);
  dialog.addEventListener('close', () => {
    dialog.remove();
    opener?.focus();
  });
  dialog.showModal();
  alias.focus();
}
