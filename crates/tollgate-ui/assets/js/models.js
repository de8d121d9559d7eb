// The models page (#/models): the deployments of GET /model/info (credentials are never in its
// answer, and no secret field is drawn), add/edit/delete of the deployments stored in the
// database (/model/new, /model/update, /model/delete; config-file ones are read-only), and a
// "Test" per model: one short /v1/chat/completions call showing the answer, the latency and
// the cost the gateway charged (its x-litellm-response-cost header). The chat route takes a
// virtual key, not the UI session, so the test uses a key typed in or created here.

import { canWrite, get, post, postWithKey } from './api.js';
import { announce, errorBox, fill, field, h, heading, usd } from './dom.js';
import { openModelForm } from './model_form.js';

/** The key tests are sent with: kept in this page's memory only, never stored. */
let testKey = '';

function price(v) {
  return typeof v === 'number' ? `$${v}` : '—';
}

/** One short chat call to `name` with the test key; its outcome goes into `out`. */
async function testModel(name, ui) {
  const { key, prompt, out } = ui;
  testKey = key.value.trim();
  if (!testKey) {
    fill(out, errorBox(new Error('Enter or create a virtual key to test with: /v1/chat/completions takes a virtual key, not the UI session.')));
    key.focus();
    return;
  }
  fill(out, h('p', { class: 'loading' }, `Testing ${name}…`));
  try {
    const body = { model: name, messages: [{ role: 'user', content: prompt.value || 'Say hello.' }], max_tokens: 32 };
    const { data, headers, ms } = await postWithKey('/v1/chat/completions', testKey, body);
    const cost = headers.get('x-litellm-response-cost');
    const answer = data?.choices?.[0]?.message?.content ?? '';
    fill(out, h('dl', { class: 'facts', id: 'model-test-facts' },
      h('dt', {}, 'Answered by'), h('dd', { id: 'model-test-model' }, data?.model ?? name),
      h('dt', {}, 'Answer'), h('dd', { id: 'model-test-answer' }, answer || '(empty answer)'),
      h('dt', {}, 'Latency'), h('dd', { id: 'model-test-latency', 'data-ms': Math.round(ms) }, `${Math.round(ms)} ms`),
      h('dt', {}, 'Cost (USD)'), h('dd', { id: 'model-test-cost', 'data-usd': cost ?? '' }, cost === null ? '— (no x-litellm-response-cost header)' : usd(Number(cost)))));
    announce(`Test of ${name} answered in ${Math.round(ms)} ms.`);
  } catch (e) {
    fill(out, errorBox(e));
  }
}

/** The test panel: the key, a "Create a test key" button for admins, the prompt, the result. */
function testPanel(session) {
  const [keyField, key] = field('model-test-key', 'Virtual key for tests', { type: 'password', autocomplete: 'off', value: testKey },
    'the chat route takes a key, not this session; kept in this page only');
  const [promptField, prompt] = field('model-test-prompt', 'Test prompt', { autocomplete: 'off', value: 'Say hello.' });
  const out = h('div', { id: 'model-test-result', 'aria-live': 'polite' });
  const create = canWrite(session)
    ? h('button', { type: 'button', id: 'model-test-create-key', onclick: async () => {
      try {
        const k = await post('/key/generate', { key_alias: `ui-model-test-${Date.now()}`, duration: '1h' });
        key.value = k.key;
        testKey = k.key;
        fill(out, h('p', {}, `Created the key ${k.key_alias} (expires in an hour) for tests.`));
        announce('Test key created.');
      } catch (e) {
        fill(out, errorBox(e));
      }
    } }, 'Create a test key')
    : null;
  const panel = h('section', { class: 'panel', 'aria-labelledby': 'model-test-title' },
    h('h2', { id: 'model-test-title' }, 'Test a model'),
    h('div', { class: 'bar' }, keyField, promptField, create),
    out);
  return { panel, ui: { key, prompt, out } };
}

function modelRow(m, session, ui, errors, reload) {
  const p = m.litellm_params ?? {};
  const i = m.model_info ?? {};
  const stored = i.db_model === true;
  const write = canWrite(session) && stored;
  return h('tr', { 'data-model-id': i.id ?? '' },
    h('td', {}, m.model_name),
    h('td', {}, p.model ?? '—'),
    h('td', {}, p.api_base ?? '—'),
    h('td', { class: 'secret' }, i.id ?? '—'),
    h('td', {}, stored ? 'Database' : 'Config file'),
    h('td', { class: 'num' }, `${price(i.input_cost_per_token)} / ${price(i.output_cost_per_token)}`),
    h('td', {}, h('div', { class: 'actions' },
      h('button', { type: 'button', 'aria-label': `Test model ${m.model_name}`, onclick: () => testModel(m.model_name, ui) }, 'Test'),
      // the table is drawn again after a save: the focus goes to the new row's Edit button
      write ? h('button', { type: 'button', id: `model-edit-${i.id}`, 'aria-label': `Edit model ${m.model_name}`, onclick: (ev) => openModelForm(ev.currentTarget, async () => {
        await reload();
        document.getElementById(`model-edit-${i.id}`)?.focus();
      }, m) }, 'Edit') : null,
      write ? h('button', { type: 'button', class: 'danger', 'aria-label': `Delete model ${m.model_name}`, onclick: async () => {
        errors.replaceChildren();
        if (!window.confirm(`Delete the deployment ${m.model_name} (${i.id})? Requests for it are no longer routed to it.`)) return;
        try {
          await post('/model/delete', { id: i.id });
          announce('Model deleted.');
          await reload();
          document.getElementById('page-title')?.focus();
        } catch (e) {
          errors.append(errorBox(e));
        }
      } }, 'Delete') : null)));
}

/** Renders the models page into `main`. */
export async function modelsView(main, session) {
  const errors = h('div', { id: 'models-errors' });
  const table = h('div', { class: 'table-wrap' });
  const { panel, ui } = testPanel(session);
  const reload = async () => {
    errors.replaceChildren();
    try {
      const { data } = await get('/model/info');
      fill(table, h('table', { id: 'models-table' },
        h('caption', { class: 'visually-hidden' }, 'Model deployments'),
        h('thead', {}, h('tr', {}, ['Public name', 'Provider model', 'API base', 'ID', 'Source', 'Price in / out (USD per token)', 'Actions']
          .map((t) => h('th', { scope: 'col', class: t.startsWith('Price') ? 'num' : '' }, t)))),
        h('tbody', {}, data.length
          ? data.map((m) => modelRow(m, session, ui, errors, reload))
          : h('tr', {}, h('td', { colspan: '7' }, 'No model deployments.')))));
    } catch (e) {
      errors.append(errorBox(e));
    }
  };
  const add = canWrite(session)
    ? h('button', { type: 'button', class: 'primary', id: 'add-model', onclick: (ev) => openModelForm(ev.currentTarget, reload) }, 'Add model')
    : null;
  fill(main, h('div', { class: 'row' }, heading('Models'), add),
    h('p', { class: 'hint' }, 'Deployments from the config file are read-only here; added ones are stored in the database (store_model_in_db). API keys are never shown.'),
    errors, table, panel);
  await reload();
}
