// Browser-test steps run after the key has been spent until refused (called from run.mjs):
// the spend page for today shows /key/info's spend (today's bar, the total and the key's row)
// and /team/info's on the team's row; then the models page lists, adds, edits, tests and
// deletes a deployment without ever showing its API key.

import assert from 'node:assert/strict';

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });

/** Today's UTC date, `YYYY-MM-DD` (the spend page and the store both count UTC days). */
function today() {
  return new Date().toISOString().slice(0, 10);
}

/** The `data-spend` of `locator` as a number. */
async function spendOf(locator) {
  return Number(await locator.getAttribute('data-spend'));
}

/**
 * `#/spend` from today to today: the bar of today, `#spend-total` and the key's row equal the
 * key's `/key/info` spend (it is the only key that has spent so far), the team's row equals
 * `/team/info`'s spend. Saves `spend.png`.
 */
async function spendCheck(page, { base, api, shot, hash, teamId }) {
  const day = today();
  await page.getByRole('link', { name: 'Spend' }).click();
  await page.getByRole('heading', { name: 'Spend', exact: true, level: 1 }).waitFor();
  await page.getByLabel('From', { exact: true }).fill(day);
  await page.getByLabel('To', { exact: true }).fill(day);
  await page.getByRole('button', { name: 'Show' }).click();
  const keyRow = page.locator(`#spend-table tr[data-group="${hash}"]`);
  await keyRow.waitFor();
  const key = (await api(base, 'GET', `/key/info?key=${hash}`)).info;
  const bars = page.locator('#spend-chart rect[data-date]');
  assert.deepEqual(await bars.evaluateAll((b) => b.map((e) => e.dataset.date)), [day], 'one bar: today');
  assert.equal(await spendOf(bars.first()), key.spend, "today's bar is the key's spend");
  assert.equal(await spendOf(page.locator('#spend-total')), key.spend);
  assert.equal(await spendOf(keyRow.locator('td[data-spend]')), key.spend);
  assert.equal(await keyRow.locator('td').first().textContent(), 'ui-key', 'the row is labelled by the alias');

  await page.getByLabel('Group by').selectOption('team');
  const teamRow = page.locator(`#spend-table tr[data-group="${teamId}"]`);
  await teamRow.waitFor();
  const team = (await api(base, 'GET', `/team/info?team_id=${teamId}`)).team_info;
  assert.equal(await spendOf(teamRow.locator('td[data-spend]')), team.spend, "the team's row is /team/info's spend");
  assert.equal(await teamRow.locator('td').first().textContent(), 'ui-team');
  await shot(page, 'spend');
  return { day, keySpend: key.spend, teamSpend: team.spend };
}

/** The upstream API key the test deployment is added with: it must never reach the page. */
const MODEL_SECRET = 'sk-upstream-ui-CANARY2';
const PROMPT = 'Say hello.';

/** The `/model/info` entry named `name`, if any. */
async function modelInfo(base, api, name) {
  return (await api(base, 'GET', '/model/info')).data.find((m) => m.model_name === name);
}

/**
 * Clicks "Test" on `name`; returns what the page shows and the chat answer the browser got
 * (its `x-litellm-response-cost` header and usage).
 */
async function runTest(page, name) {
  const answered = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  await page.getByRole('button', { name: `Test model ${name}` }).click();
  const resp = await answered;
  assert.equal(resp.status(), 200, await resp.text());
  const header = resp.headers()['x-litellm-response-cost'];
  const usage = (await resp.json()).usage;
  await page.locator('#model-test-answer').waitFor();
  return {
    header,
    usage,
    answer: await page.locator('#model-test-answer').textContent(),
    cost: await page.locator('#model-test-cost').getAttribute('data-usd'),
    costText: await page.locator('#model-test-cost').textContent(),
    ms: Number(await page.locator('#model-test-latency').getAttribute('data-ms')),
  };
}

/**
 * `#/models`: the config deployment m1 is listed read-only; a deployment added with an API key
 * is listed without it, edited (its price), tested (answer = the mock's reply, cost = the
 * gateway's header = completion tokens × the edited price) and deleted. Saves `models.png`.
 */
async function modelsCheck(page, { base, api, shot }) {
  await page.getByRole('link', { name: 'Models' }).click();
  await page.getByRole('heading', { name: 'Models', exact: true, level: 1 }).waitFor();
  const m1 = page.locator('#models-table tr[data-model-id="m1"]');
  await m1.waitFor();
  assert.equal(await m1.locator('td').nth(4).textContent(), 'Config file');
  assert.equal(await m1.getByRole('button', { name: 'Edit model m1' }).count(), 0, 'config deployments are read-only');
  const apiBase = (await modelInfo(base, api, 'm1')).litellm_params.api_base;

  await page.getByRole('button', { name: 'Add model' }).click();
  const form = page.locator('#model-dialog');
  await page.waitForFunction(() => document.activeElement?.id === 'model-name');
  await form.getByLabel('Public model name').fill('ui-m2');
  await form.getByLabel('Provider model').fill('openai/m2');
  await form.getByLabel('API base').fill(apiBase);
  await form.getByLabel('API key', { exact: false }).fill(MODEL_SECRET);
  await form.getByLabel('Input price (USD per token)').fill('0');
  await form.getByLabel('Output price (USD per token)').fill('0.001');
  await form.getByRole('button', { name: 'Add model' }).click();
  await form.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'add-model', 'focus returns to the opener');
  const row = page.locator('#models-table tr', { hasText: 'ui-m2' });
  await row.waitFor();
  const added = await modelInfo(base, api, 'ui-m2');
  assert.equal(added.model_info.db_model, true);
  assert.equal(await row.getAttribute('data-model-id'), added.model_info.id);
  assert.equal(await row.locator('td').nth(4).textContent(), 'Database');

  await row.getByRole('button', { name: 'Edit model ui-m2' }).click();
  assert.equal(await form.getByLabel('API key', { exact: false }).inputValue(), '', 'the stored key is never shown back');
  assert.equal(await form.getByLabel('Output price (USD per token)').inputValue(), '0.001');
  await form.getByLabel('Output price (USD per token)').fill('0.002');
  await form.getByRole('button', { name: 'Save changes' }).click();
  await form.waitFor({ state: 'detached' });
  await row.filter({ hasText: '$0.002' }).waitFor();
  await page.waitForFunction((id) => document.activeElement?.id === id, `model-edit-${added.model_info.id}`);
  const edited = await modelInfo(base, api, 'ui-m2');
  assert.equal(edited.model_info.output_cost_per_token, 0.002);
  assert.equal(JSON.stringify(edited).includes(MODEL_SECRET), false, '/model/info never returns the key');

  await page.getByRole('button', { name: 'Create a test key' }).click();
  await page.locator('#model-test-result', { hasText: 'Created the key' }).waitFor();
  const t = await runTest(page, 'ui-m2');
  assert.equal(t.answer, `This is a mock response to: ${PROMPT}`);
  assert.equal(t.cost, t.header, 'the cost shown is the x-litellm-response-cost header');
  assert.ok(Math.abs(Number(t.header) - t.usage.completion_tokens * 0.002) < 1e-12, `cost ${t.header} for ${JSON.stringify(t.usage)}`);
  assert.equal(t.costText, usd.format(Number(t.header)));
  assert.ok(Number.isInteger(t.ms) && t.ms >= 0, `latency ${t.ms}`);
  assert.equal((await page.content()).includes(MODEL_SECRET), false, 'the page never shows the key');
  await shot(page, 'models');

  page.once('dialog', (d) => d.accept());
  await row.getByRole('button', { name: 'Delete model ui-m2' }).click();
  await row.waitFor({ state: 'detached' });
  assert.equal(await modelInfo(base, api, 'ui-m2'), undefined);
  return { answer: t.answer, cost: t.header, latencyMs: t.ms, usage: t.usage };
}

/**
 * The spend page's checks, then the models page's; prints what they saw and returns to the
 * page the browser was on (the caller goes on from there).
 */
export async function spendAndModelChecks(page, t) {
  const back = page.url();
  const spend = await spendCheck(page, t);
  console.log(`spend page: ${JSON.stringify(spend)}`);
  const models = await modelsCheck(page, t);
  console.log(`models page test: ${JSON.stringify(models)}`);
  await page.goto(back);
  await page.locator('#page-title').waitFor();
}
