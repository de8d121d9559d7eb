// The "Add model" / "Edit model" dialog: POST /model/new or /model/update with the public
// name, the provider's model, API base, API key, per-token prices and rpm/tpm. The API key is
// write-only: /model/info never returns it, the form never shows one, and an edit that leaves
// it empty keeps the stored one.

import { post } from './api.js';
import { announce, errorBox, field, h } from './dom.js';

/** An input's trimmed value, or undefined when empty. */
function text(input) {
  const v = input.value.trim();
  return v === '' ? undefined : v;
}

/** A number input's value, or undefined when empty. */
function num(input) {
  return input.value.trim() === '' ? undefined : Number(input.value);
}

function str(v) {
  return v === undefined || v === null ? '' : String(v);
}

/**
 * The /model/new body from the form, or for an edit (`existing`: a /model/info entry) the
 * /model/update body: an emptied optional field is sent as null (the gateway removes it), an
 * empty API key is left out (the stored one is kept).
 */
function body(f, existing) {
  const clear = existing ? null : undefined;
  const params = { model: text(f.model), api_base: text(f.base) ?? clear, rpm: num(f.rpm) ?? clear, tpm: num(f.tpm) ?? clear };
  const info = { input_cost_per_token: num(f.inCost) ?? clear, output_cost_per_token: num(f.outCost) ?? clear };
  const key = text(f.key);
  if (key) params.api_key = key;
  const out = { model_name: text(f.name), litellm_params: params, model_info: info };
  if (existing) info.id = existing.model_info.id;
  return JSON.parse(JSON.stringify(out)); // drops the undefined entries
}

/**
 * Opens the dialog; `opener` gets the focus back when it closes, `onDone` runs after a save.
 * With `existing` (a /model/info entry of a stored deployment) it edits that deployment.
 */
export function openModelForm(opener, onDone, existing = null) {
  const dialog = h('dialog', { 'aria-labelledby': 'model-dialog-title', id: 'model-dialog' });
  document.body.append(dialog);
  const errors = h('div');
  const p = existing?.litellm_params ?? {};
  const i = existing?.model_info ?? {};
  const [nameField, name] = field('model-name', 'Public model name', { required: true, autocomplete: 'off', value: existing?.model_name ?? '' }, 'what clients send as "model"');
  const [modelField, model] = field('model-provider', 'Provider model', { required: true, autocomplete: 'off', value: str(p.model) }, 'e.g. openai/gpt-4o');
  const [baseField, base] = field('model-api-base', 'API base', { type: 'url', autocomplete: 'off', value: str(p.api_base) });
  const [keyField, key] = field('model-api-key', 'API key', { type: 'password', autocomplete: 'new-password' },
    existing ? 'stored encrypted, never shown; leave empty to keep the current one' : 'stored encrypted, never shown again');
  const priced = { type: 'number', min: '0', step: 'any', inputmode: 'decimal' };
  const [inField, inCost] = field('model-input-cost', 'Input price (USD per token)', { ...priced, value: str(i.input_cost_per_token) });
  const [outField, outCost] = field('model-output-cost', 'Output price (USD per token)', { ...priced, value: str(i.output_cost_per_token) });
  const [rpmField, rpm] = field('model-rpm', 'Requests per minute', { type: 'number', min: '0', step: '1', value: str(p.rpm) });
  const [tpmField, tpm] = field('model-tpm', 'Tokens per minute', { type: 'number', min: '0', step: '1', value: str(p.tpm) });
  const f = { name, model, base, key, inCost, outCost, rpm, tpm };
  const form = h('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      errors.replaceChildren();
      const submit = form.querySelector('button[type=submit]');
      submit.disabled = true;
      try {
        await post(existing ? '/model/update' : '/model/new', body(f, existing));
        announce(existing ? 'Model updated.' : 'Model added.');
        dialog.close();
        await onDone();
      } catch (err) {
        errors.append(errorBox(err));
        submit.disabled = false;
      }
    },
  },
  h('h2', { id: 'model-dialog-title' }, existing ? `Edit model ${existing.model_name}` : 'Add a model deployment'),
  errors,
  h('div', { class: 'grid' }, nameField, modelField, baseField, keyField, inField, outField, rpmField, tpmField),
  h('div', { class: 'row' },
    h('button', { type: 'submit', class: 'primary' }, existing ? 'Save changes' : 'Add model'),
    h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel')));
  dialog.append(form);
  dialog.addEventListener('close', () => {
    dialog.remove();
    opener?.focus();
  });
  dialog.showModal();
  name.focus();
}
