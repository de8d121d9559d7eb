// Browser test of the admin UI (issue 25) in Debian's chromium, driven by playwright-core
// (no browser is downloaded). Starts the built `tollgate` against `tollgate-mock`, then in the
// browser: logs in with the master key, creates a team and a key with a 0.05 USD budget in it,
// spends the key through the gateway (fetch from node) until it is refused, reloads the key's
// page and checks that the spend shown equals /key/info's and that the key shows as over
// budget; edits its budget, regenerates it (new secret admitted, old one 401) and blocks it;
// finally an internal user logs in with a password and sees only their own key.
// Screenshots of each page go to target/ui-screenshots/.
//
// Without chromium: fails when CI is set (or TOLLGATE_REQUIRE_BROWSER=1); otherwise reports
// the skip into $TOLLGATE_TEST_SKIP_LOG like the Rust tests do (scripts/test.sh sums it up).

import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { adminPagesTest } from './pages_admin.mjs';
import { binDir, startGateway, startMock, stopAll } from './procs.mjs';
import { spendAndModelChecks } from './spend_check.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const browserPath = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';
const shots = resolve(repo, process.env.CARGO_TARGET_DIR ?? 'target', 'ui-screenshots');
const MASTER = 'sk-ui-master-CANARY1';
/** USD per output token: a call with max_tokens 8 (8 tokens from the mock) costs 0.01 USD. */
const OUTPUT_PRICE = 0.00125;
const BUDGET = 0.05;

if (!existsSync(browserPath)) {
  const required = process.env.CI || process.env.TOLLGATE_REQUIRE_BROWSER === '1';
  if (required) {
    console.error(`FAIL: no chromium at ${browserPath} (.ci/run installs Debian's chromium)`);
    process.exit(1);
  }
  console.error(`SKIPPED tests/ui (admin UI browser test): no chromium at ${browserPath}`);
  if (process.env.TOLLGATE_TEST_SKIP_LOG) {
    appendFileSync(process.env.TOLLGATE_TEST_SKIP_LOG, 'TOLLGATE_CHROMIUM\t/usr/bin/chromium\ttests/ui::admin_ui_browser_test\n');
  }
  process.exit(0);
}

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });

function config(mockUrl) {
  return `model_list:
  - model_name: "m1"
    litellm_params:
      model: "openai/m1"
      api_base: ${mockUrl}/v1
      api_key: sk-upstream-mock
    model_info:
      id: m1
      input_cost_per_token: 0
      output_cost_per_token: ${OUTPUT_PRICE}
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: ${MASTER}
`;
}

/** A management call with the master key (what a script does). */
async function api(base, method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${MASTER}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await r.json();
  assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(data)}`);
  return data;
}

/** One chat call with `key` (8 output tokens: 0.01 USD): `[status, body]`. */
async function chat(base, key) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hello' }], max_tokens: 8 }),
  });
  return [r.status, await r.json()];
}

/** Chat calls with `key` until one is refused; returns every status and the refusal's body. */
async function spendUntilRefused(base, key) {
  const statuses = [];
  for (let i = 0; i < 20; i += 1) {
    const [status, data] = await chat(base, key);
    statuses.push(status);
    if (status !== 200) return { statuses, refusal: data };
  }
  throw new Error(`never refused: ${statuses}`);
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function main() {
  mkdirSync(shots, { recursive: true });
  const bins = binDir(repo);
  const mock = await startMock(bins);
  const gw = await startGateway(bins, config(mock.url));
  const base = gw.url;
  const browser = await chromium.launch({ executablePath: browserPath, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));

    // Login with the master key (a wrong one first: the error is shown in words).
    await page.goto(`${base}/ui/`);
    await page.getByLabel('Master key', { exact: true }).fill('sk-wrong');
    await page.getByRole('button', { name: 'Log in with the master key' }).click();
    await page.getByRole('alert').filter({ hasText: '401: Invalid credentials used to access UI.' }).waitFor();
    await shot(page, '01-login');
    // By keyboard: Enter in the field submits its form.
    await page.getByLabel('Master key', { exact: true }).fill(MASTER);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Virtual keys' }).waitFor();
    await shot(page, '02-keys-empty');

    // A team.
    await page.getByRole('link', { name: 'Teams' }).click();
    await page.getByLabel('Team alias').fill('ui-team');
    await page.getByLabel('Max budget (USD)').fill('10');
    await page.getByRole('button', { name: 'Create team' }).click();
    const teamRow = page.locator('tr[data-team]', { hasText: 'ui-team' });
    await teamRow.waitFor();
    const teamId = await teamRow.getAttribute('data-team');
    assert.equal(await teamRow.locator('td').nth(3).textContent(), '$10.00');
    await shot(page, '03-teams');

    // A key in it with a 0.05 USD budget; its secret is shown once. Escape closes the dialog
    // and gives the focus back to the button that opened it.
    await page.getByRole('link', { name: 'Virtual keys' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-dialog').waitFor();
    await page.waitForFunction(() => document.activeElement?.id === 'key-alias'); // its first field
    await page.keyboard.press('Escape');
    await page.locator('#key-dialog').waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'create-key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.locator('#key-dialog');
    await dialog.getByLabel('Key alias', { exact: true }).fill('ui-key');
    await dialog.getByLabel('Team', { exact: true }).selectOption(teamId);
    await dialog.getByLabel('Max budget (USD)').fill(String(BUDGET));
    await dialog.getByLabel('Requests per minute').fill('100');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('Secret key').inputValue();
    assert.match(secret, /^sk-/);
    await shot(page, '04-key-created');
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'create-key', 'focus returns to the opener');
    const keyRow = page.locator('tr[data-key]', { hasText: 'ui-key' });
    await keyRow.waitFor();
    const hash = await keyRow.getAttribute('data-key');
    const created = await api(base, 'GET', `/key/info?key=${hash}`);
    assert.deepEqual([created.info.team_id, created.info.max_budget, created.info.rpm_limit], [teamId, BUDGET, 100]);

    // Spend it through the gateway until refused.
    const { statuses, refusal } = await spendUntilRefused(base, secret);
    assert.deepEqual(statuses.slice(0, -1), [200, 200, 200, 200, 200], `statuses ${statuses}`);
    assert.equal(refusal.error.type, 'budget_exceeded', JSON.stringify(refusal));

    // The key's page, reloaded, shows /key/info's spend and the refusal.
    await keyRow.getByRole('link', { name: 'ui-key' }).click();
    await page.getByRole('heading', { name: 'Key ui-key' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Key ui-key' }).waitFor();
    const info = (await api(base, 'GET', `/key/info?key=${hash}`)).info;
    assert.ok(info.spend >= BUDGET - 1e-9, `spend ${info.spend}`);
    const spend = page.locator('#key-spend');
    assert.equal(Number(await spend.getAttribute('data-usd')), info.spend);
    assert.equal(await spend.textContent(), usd.format(info.spend));
    assert.equal(await page.locator('#key-status [data-status]').getAttribute('data-status'), 'over-budget');
    assert.equal(await page.locator('#key-refusal').textContent(), 'New requests are refused: the key is over its budget.');
    await shot(page, '05-key-over-budget');
    await spendAndModelChecks(page, { base, api, shot, hash, teamId });

    // Edit: a larger budget makes it active again.
    page.on('dialog', (d) => d.accept());
    await page.getByRole('button', { name: 'Edit key' }).click();
    const edit = page.locator('#key-dialog');
    assert.equal(await edit.getByLabel('Max budget (USD)').inputValue(), String(BUDGET));
    await edit.getByLabel('Max budget (USD)').fill('1');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('#key-status [data-status="active"]').waitFor();
    const edited = (await api(base, 'GET', `/key/info?key=${hash}`)).info;
    assert.deepEqual([edited.max_budget, edited.spend, edited.rpm_limit], [1, info.spend, 100]);
    await shot(page, '06-key-edited');

    // Regenerate: a new secret, shown once, works; the old one is deleted.
    await page.getByRole('button', { name: 'Regenerate key' }).click();
    const fresh = await page.getByLabel('Secret key').inputValue();
    assert.ok(fresh.startsWith('sk-') && fresh !== secret);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.waitForFunction((old) => /^#\/keys\/[0-9a-f]{64}$/.test(location.hash) && !location.hash.endsWith(old), hash);
    const newHash = await page.evaluate(() => location.hash.slice('#/keys/'.length));
    await page.locator('dd', { hasText: newHash }).waitFor();
    assert.equal((await api(base, 'GET', `/key/info?key=${hash}`)).info.status, 'deleted');
    const [freshStatus, answer] = await chat(base, fresh);
    assert.equal(freshStatus, 200, `the regenerated key is admitted: ${JSON.stringify(answer)}`);
    const [oldStatus] = await chat(base, secret);
    assert.equal(oldStatus, 401, 'the old secret is refused');

    // Block it from its page.
    await page.getByRole('button', { name: 'Block key' }).click();
    await page.getByRole('button', { name: 'Unblock key' }).waitFor();
    assert.equal((await api(base, 'GET', `/key/info?key=${newHash}`)).info.blocked, true);
    await adminPagesTest(page, { base, master: MASTER, api: (method, path, body) => api(base, method, path, body), shot: (name) => shot(page, name) });

    // An internal user with a password sees only their own key.
    const ann = await api(base, 'POST', '/user/new', { user_id: 'ann', user_email: 'ann@example.com', password: 'ann-pw-1' });
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('textbox', { name: /^Username/ }).fill('ann@example.com');
    await page.getByLabel('Password', { exact: true }).fill('ann-pw-1');
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await shot(page, '07-internal-user-login');
    await page.getByRole('heading', { name: 'Virtual keys' }).waitFor();
    const rows = page.locator('tr[data-key]');
    await rows.first().waitFor();
    assert.deepEqual(await rows.evaluateAll((r) => r.map((e) => e.dataset.key)), [ann.token_id]);
    assert.equal(await page.getByRole('button', { name: 'Create key' }).count(), 0, 'no create for an internal user');
    await shot(page, '08-internal-user-keys');

    // Phone width: the page still reads.
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, '09-phone');
    assert.deepEqual(pageErrors, [], 'no script errors');
    console.log(`ok: admin UI browser test (statuses ${statuses.join(',')}; spend ${info.spend} USD); screenshots in ${shots}`);
  } finally {
    await browser.close();
    stopAll();
  }
}

main().catch((e) => {
  console.error(`FAIL: admin UI browser test: ${e.stack ?? e}`);
  stopAll();
  process.exit(1);
});
