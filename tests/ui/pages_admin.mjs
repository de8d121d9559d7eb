// Browser steps for the admin pages of internal users, end users, budget tiers, tags and team
// members (issue 25), run by run.mjs once the master key is logged in and the team `ui-team`
// exists. Each step acts in the page, then checks that the management API holds what was
// entered and that the page shows the API's values. Ends logged in as the internal user it
// created (the write controls hidden); the caller logs out next.

import assert from 'node:assert/strict';

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 });
const money = (n) => (typeof n === 'number' ? usd.format(n) : '—');

/** The texts of the cells of `row` (a locator), the actions cell left out when `drop`. */
async function cells(row, drop = true) {
  const texts = await row.locator('td').allTextContents();
  return drop ? texts.slice(0, -1) : texts;
}

/** Polls `fn` until it returns a truthy value (5 s at most). */
async function until(what, fn) {
  for (let i = 0; i < 50; i += 1) {
    const v = await fn();
    if (v) return v;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One chat call with the master key for end user `user`, carrying `tags`: `[status, body]`. */
async function chat(ctx, user, tags) {
  const r = await fetch(`${ctx.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.master}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, user, tags }),
  });
  return [r.status, await r.json()];
}

/** The HTTP status of a management call with the master key (for the ones expected to fail). */
async function statusOf(ctx, method, path, body) {
  const r = await fetch(ctx.base + path, {
    method,
    headers: { authorization: `Bearer ${ctx.master}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return r.status;
}

async function usersSteps(page, ctx) {
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByRole('heading', { name: 'Internal users' }).waitFor();
  await page.getByRole('button', { name: 'Create user' }).click();
  const d = page.locator('#user-dialog');
  await d.getByLabel('User ID').fill('ui-user-1');
  await d.getByLabel('E-mail').fill('ui-user-1@example.com');
  await d.getByLabel('Role').selectOption('internal_user');
  await d.getByLabel('Max budget (USD)').fill('2');
  await d.getByLabel('Budget reset').selectOption('30d');
  await d.getByLabel('Models').fill('m1');
  await d.getByLabel('UI password').fill('ui-user-pw-1');
  await d.getByRole('button', { name: 'Create user' }).click();
  const secret = await page.getByLabel('Secret key').inputValue();
  assert.match(secret, /^sk-/);
  await page.getByRole('button', { name: 'Done' }).click();
  await page.locator('#key-dialog').waitFor({ state: 'detached' });
  await page.waitForFunction(() => document.activeElement?.id === 'create-user'); // back on the opener
  const info = await ctx.api('GET', '/user/info?user_id=ui-user-1');
  const u = info.user_info;
  assert.deepEqual([u.user_email, u.user_role, u.max_budget, u.budget_duration, u.models], ['ui-user-1@example.com', 'internal_user', 2, '30d', ['m1']]);
  assert.equal((await ctx.api('GET', `/key/info?key=${secret}`)).info.user_id, 'ui-user-1', 'the key shown is the user\'s');
  const row = page.locator('tr[data-user="ui-user-1"]');
  assert.deepEqual(await cells(row), ['ui-user-1', u.user_email, u.user_role, money(u.spend), money(u.max_budget), 'every 30d', 'm1', '—']);

  // Edit: the budget field starts on the stored value; the saved one is what the API holds.
  await row.getByRole('button', { name: 'Edit user ui-user-1' }).click();
  assert.equal(await d.getByLabel('Max budget (USD)').inputValue(), '2');
  await d.getByLabel('Max budget (USD)').fill('3');
  await d.getByRole('button', { name: 'Save changes' }).click();
  await row.locator('td').nth(4).filter({ hasText: '$3.00' }).waitFor();
  assert.equal((await ctx.api('GET', '/user/info?user_id=ui-user-1')).user_info.max_budget, 3);
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'page-title', 'focus on the title once the row was redrawn');

  // Server-side filter: only that user, and the page count the API gives.
  await page.getByLabel('User IDs').fill('ui-user-1');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator('#users-count', { hasText: '· 1 users' }).waitFor();
  assert.deepEqual(await page.locator('tr[data-user]').evaluateAll((r) => r.map((e) => e.dataset.user)), ['ui-user-1']);
  await ctx.shot('admin-01-users');

  // Delete (a second user, made by the API): gone from the page and from /user/info.
  await ctx.api('POST', '/user/new', { user_id: 'ui-user-2' });
  await page.getByLabel('User IDs').fill('ui-user-1,ui-user-2');
  await page.getByRole('button', { name: 'Search' }).click();
  const gone = page.locator('tr[data-user="ui-user-2"]');
  await gone.getByRole('button', { name: 'Delete user ui-user-2' }).click();
  await gone.waitFor({ state: 'detached' });
  assert.equal(await statusOf(ctx, 'GET', '/user/info?user_id=ui-user-2'), 404);
}

async function budgetSteps(page, ctx) {
  await page.getByRole('link', { name: 'Budget tiers' }).click();
  await page.getByRole('button', { name: 'Create budget tier' }).click();
  const d = page.locator('#budget-dialog');
  await d.getByLabel('Budget ID').fill('ui-tier');
  await d.getByLabel('Max budget (USD)').fill('5');
  await d.getByLabel('Budget reset').selectOption('1d');
  await d.getByLabel('Tokens per minute').fill('1000');
  await d.getByLabel('Requests per minute').fill('10');
  await d.getByLabel('Max parallel requests').fill('2');
  await d.getByRole('button', { name: 'Create budget tier' }).click();
  const row = page.locator('tr[data-budget="ui-tier"]');
  await row.waitFor();
  let [t] = await ctx.api('POST', '/budget/info', { budgets: ['ui-tier'] });
  assert.deepEqual([t.max_budget, t.budget_duration, t.tpm_limit, t.rpm_limit, t.max_parallel_requests], [5, '1d', 1000, 10, 2]);
  assert.deepEqual(await cells(row), ['ui-tier', money(5), 'every 1d', t.budget_reset_at, '1000', '10', '2']);
  await row.getByRole('button', { name: 'Edit budget tier ui-tier' }).click();
  await d.getByLabel('Requests per minute').fill('20');
  await d.getByRole('button', { name: 'Save changes' }).click();
  await row.locator('td').nth(5).filter({ hasText: '20' }).waitFor();
  [t] = await ctx.api('POST', '/budget/info', { budgets: ['ui-tier'] });
  assert.deepEqual([t.max_budget, t.rpm_limit, t.tpm_limit], [5, 20, 1000]);
  await ctx.shot('admin-02-budgets');

  // Delete (a second tier, made by the API).
  await ctx.api('POST', '/budget/new', { budget_id: 'ui-tier-2', max_budget: 1 });
  await page.reload();
  const gone = page.locator('tr[data-budget="ui-tier-2"]');
  await gone.getByRole('button', { name: 'Delete budget tier ui-tier-2' }).click();
  await gone.waitFor({ state: 'detached' });
  assert.equal(await statusOf(ctx, 'POST', '/budget/info', { budgets: ['ui-tier-2'] }), 404);
}

/** A tier still linked (from the end user) is not deleted: the API's refusal is shown in words. */
async function linkedTierSteps(page) {
  await page.getByRole('link', { name: 'Budget tiers' }).click();
  await page.locator('tr[data-budget="ui-tier"]').getByRole('button', { name: 'Delete budget tier ui-tier' }).click();
  await page.locator('#budgets-errors [role=alert]', { hasText: '400: Budget ui-tier is still linked from 1 ' }).waitFor();
  assert.equal(await page.locator('tr[data-budget="ui-tier"]').count(), 1);
}

async function tagSteps(page, ctx) {
  await page.getByRole('link', { name: 'Tags', exact: true }).click();
  await page.getByRole('button', { name: 'Create tag' }).click();
  const d = page.locator('#tag-dialog');
  await d.getByLabel('Tag name').fill('ui-tag');
  await d.getByLabel('Description').fill('UI test tag');
  await d.getByLabel('Models').fill('m1');
  await d.getByLabel('Max budget (USD)').fill('4');
  await d.getByRole('button', { name: 'Create tag' }).click();
  await page.locator('tr[data-tag="ui-tag"]').waitFor();
  const t = (await ctx.api('POST', '/tag/info', { names: ['ui-tag'] }))['ui-tag'];
  assert.deepEqual([t.description, t.models, t.litellm_budget_table?.max_budget], ['UI test tag', ['m1'], 4]);

  // Delete (a second tag, made by the API): gone from the page and from /tag/info.
  await ctx.api('POST', '/tag/new', { name: 'ui-tag-2' });
  await page.reload();
  const gone = page.locator('tr[data-tag="ui-tag-2"]');
  await gone.getByRole('button', { name: 'Delete tag ui-tag-2' }).click();
  await gone.waitFor({ state: 'detached' });
  assert.equal(await statusOf(ctx, 'POST', '/tag/info', { names: ['ui-tag-2'] }), 404);
}

async function customerSteps(page, ctx) {
  // Traffic: one request for end user cust-ui-1 carrying the tag (0.01 USD at the mock's price).
  const [status, answer] = await chat(ctx, 'cust-ui-1', ['ui-tag']);
  assert.equal(status, 200, JSON.stringify(answer));
  const c = await until('the end user\'s spend', async () => {
    const r = await fetch(`${ctx.base}/customer/info?end_user_id=cust-ui-1`, { headers: { authorization: `Bearer ${ctx.master}` } });
    const v = r.status === 200 ? await r.json() : null;
    return v && v.spend > 0 ? v : null;
  });
  const tag = await until('the tag\'s spend', async () => {
    const v = (await ctx.api('POST', '/tag/info', { names: ['ui-tag'] }))['ui-tag'];
    return v.spend > 0 ? v : null;
  });

  // The tag's spend, shown as the API has it.
  await page.reload();
  const tagRow = page.locator('tr[data-tag="ui-tag"]');
  await tagRow.waitFor();
  assert.deepEqual(await cells(tagRow), ['ui-tag', 'UI test tag', 'm1', money(tag.spend), money(4), 'never', 'Active']);
  assert.equal(Number(await tagRow.locator('td').nth(3).getAttribute('data-usd')), tag.spend);
  await ctx.shot('admin-03-tags');

  // The end user, found on the page.
  await page.getByRole('link', { name: 'End users', exact: true }).click();
  const row = page.locator('tr[data-customer="cust-ui-1"]');
  await row.waitFor();
  assert.deepEqual(await cells(row), ['cust-ui-1', '—', money(c.spend), '—', '—', 'never', 'Active']);
  assert.equal(Number(await row.locator('td').nth(2).getAttribute('data-usd')), c.spend);

  // Its budget: the tier made above.
  await row.getByRole('button', { name: 'Budget of end user cust-ui-1' }).click();
  const d = page.locator('#customer-dialog');
  await d.getByLabel('Budget tier').selectOption('ui-tier');
  await d.getByRole('button', { name: 'Save budget' }).click();
  await row.locator('td').nth(4).filter({ hasText: 'ui-tier' }).waitFor();
  const linked = await ctx.api('GET', '/customer/info?end_user_id=cust-ui-1');
  assert.deepEqual([linked.budget_id, linked.litellm_budget_table?.max_budget], ['ui-tier', 5]);
  assert.equal(await row.locator('td').nth(3).textContent(), money(linked.litellm_budget_table.max_budget));
  // a first budget window (the tier's 1d) starts the end user's spend at 0: the page shows the API's
  assert.equal(Number(await row.locator('td').nth(2).getAttribute('data-usd')), linked.spend);

  // Block: the API says blocked, the page too, and the end user's next request is refused.
  await row.getByRole('button', { name: 'Block end user cust-ui-1' }).click();
  await row.locator('[data-status="blocked"]').waitFor();
  await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Unblock end user cust-ui-1'); // focus kept on the row
  assert.equal((await ctx.api('GET', '/customer/info?end_user_id=cust-ui-1')).blocked, true);
  assert.equal(await row.getByRole('button', { name: 'Unblock end user cust-ui-1' }).count(), 1);
  const [refused] = await chat(ctx, 'cust-ui-1');
  assert.notEqual(refused, 200, 'a blocked end user is refused');
  await ctx.shot('admin-04-customers');
  await page.setViewportSize({ width: 390, height: 844 });
  await ctx.shot('admin-05-customers-phone');
  await page.setViewportSize({ width: 1280, height: 800 });
}

async function memberSteps(page, ctx) {
  const team = (await ctx.api('GET', '/team/list')).find((t) => t.team_alias === 'ui-team');
  await page.getByRole('link', { name: 'Teams', exact: true }).click();
  await page.getByRole('link', { name: 'ui-team' }).click();
  await page.getByRole('heading', { name: 'Team ui-team' }).waitFor();
  await page.getByLabel('User ID').fill('ui-user-1');
  await page.getByLabel('Role in team').selectOption('user');
  await page.getByLabel('Max budget in team (USD)').fill('1.5');
  await page.getByRole('button', { name: 'Add member' }).click();
  const row = page.locator('tr[data-member="ui-user-1"]');
  await row.waitFor();
  let info = await ctx.api('GET', `/team/info?team_id=${team.team_id}`);
  let m = info.team_info.members_with_roles.find((x) => x.user_id === 'ui-user-1');
  const ms = info.team_memberships.find((x) => x.user_id === 'ui-user-1');
  assert.equal(m.role, 'user');
  assert.equal(ms.litellm_budget_table?.max_budget, 1.5);
  assert.deepEqual(await cells(row), ['ui-user-1', m.user_email ?? '—', 'user', money(ms.spend), money(1.5)]);

  // Its role becomes admin.
  await row.getByRole('button', { name: 'Edit member ui-user-1' }).click();
  await page.locator('#member-dialog').getByLabel('Role in team').selectOption('admin');
  await page.locator('#member-dialog').getByRole('button', { name: 'Save member' }).click();
  await page.locator('tr[data-member="ui-user-1"] td:nth-child(3)', { hasText: 'admin' }).waitFor();
  info = await ctx.api('GET', `/team/info?team_id=${team.team_id}`);
  m = info.team_info.members_with_roles.find((x) => x.user_id === 'ui-user-1');
  assert.equal(m.role, 'admin');

  // A member added by e-mail, then removed.
  await page.getByRole('textbox', { name: /^E-mail/ }).fill('ui-member-2@example.com');
  await page.getByRole('button', { name: 'Add member' }).click();
  const second = page.locator('tr[data-member]', { hasText: 'ui-member-2@example.com' });
  await second.waitFor();
  await ctx.shot('admin-06-team-members');
  await second.getByRole('button', { name: /^Remove member/ }).click();
  await second.waitFor({ state: 'detached' });
  info = await ctx.api('GET', `/team/info?team_id=${team.team_id}`);
  assert.deepEqual(info.team_info.members_with_roles.filter((x) => x.user_email === 'ui-member-2@example.com'), []);
}

/** The internal user ui-user-1, logged in with its password, sees its own user and team, read only. */
async function internalUserSteps(page) {
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('textbox', { name: /^Username/ }).fill('ui-user-1@example.com');
  await page.getByLabel('Password', { exact: true }).fill('ui-user-pw-1');
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
  await page.getByRole('heading', { name: 'Virtual keys' }).waitFor();
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByRole('heading', { name: 'Your user' }).waitFor();
  assert.deepEqual(await page.locator('tr[data-user]').evaluateAll((r) => r.map((e) => e.dataset.user)), ['ui-user-1']);
  assert.equal(await page.getByRole('button', { name: /^(Create user|Edit|Delete)/ }).count(), 0);
  await page.getByRole('link', { name: 'Teams', exact: true }).click();
  await page.getByRole('link', { name: 'ui-team' }).click();
  await page.getByRole('heading', { name: 'Team ui-team' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /^(Add member|Edit member|Remove member)/ }).count(), 0);
  await page.getByRole('link', { name: 'End users', exact: true }).click();
  await page.getByText('Only proxy admins and admin viewers can list end users.').waitFor();
  // a team it is not in: the API's 403, in words
  await page.evaluate(() => { location.hash = '#/teams/no-such-team'; });
  await page.getByRole('alert').filter({ hasText: /^403: / }).waitFor();
}

/**
 * The admin pages test. `ctx`: `{ base, master, api(method, path, body), shot(name) }` (`api`
 * calls the management API with the master key and asserts a 200).
 */
export async function adminPagesTest(page, ctx) {
  // the confirms of the delete buttons are accepted (unless the caller already does)
  if (page.listenerCount('dialog') === 0) page.on('dialog', (d) => d.accept());
  await usersSteps(page, ctx);
  await budgetSteps(page, ctx);
  await tagSteps(page, ctx);
  await customerSteps(page, ctx);
  await linkedTierSteps(page);
  await memberSteps(page, ctx);
  await internalUserSteps(page);
  console.log('ok: admin pages (users, budget tiers, tags, end users, team members)');
}
