// The admin UI's entry point: checks the session, then routes `#/keys`, `#/keys/<hash>`,
// `#/teams`, `#/teams/<team_id>`, `#/users`, `#/customers`, `#/budgets`, `#/tags`, `#/models`
// and `#/spend` to their views; without a session, the login page.

import { get, post, setCsrf } from './api.js';
import { budgetsView } from './budgets.js';
import { customersView } from './customers.js';
import { announce, errorBox, fill } from './dom.js';
import { keyPage } from './key_page.js';
import { keysView } from './keys.js';
import { loginView } from './login.js';
import { modelsView } from './models.js';
import { spendView } from './spend.js';
import { tagsView } from './tags.js';
import { teamPage } from './team_page.js';
import { teamsView } from './teams.js';
import { usersView } from './users.js';

const main = document.getElementById('main');
const top = document.getElementById('top');
let session = null;

function setSession(s) {
  session = s;
  setCsrf(s ? s.csrf_token : null);
}

async function route() {
  if (!session) {
    top.hidden = true;
    document.title = 'Log in · Tollgate';
    loginView(main, (s) => {
      setSession(s);
      if (!location.hash || location.hash === '#/') location.hash = '#/keys';
      else route();
    });
    return;
  }
  top.hidden = false;
  document.getElementById('who').textContent = `${session.user_id} (${session.user_role})`;
  const hash = location.hash || '#/keys';
  const [, page, id] = hash.split('/');
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  try {
    if (page === 'keys' && id) await keyPage(main, session, decodeURIComponent(id));
    else if (page === 'teams' && id) await teamPage(main, session, decodeURIComponent(id));
    else if (page === 'teams') await teamsView(main, session);
    else if (page === 'users') await usersView(main, session);
    else if (page === 'customers') await customersView(main, session);
    else if (page === 'budgets') await budgetsView(main, session);
    else if (page === 'tags') await tagsView(main, session);
    else if (page === 'models') await modelsView(main, session);
    else if (page === 'spend') await spendView(main, session);
    else await keysView(main, session);
  } catch (e) {
    if (e.status === 401) {
      setSession(null);
      route();
      return;
    }
    fill(main, errorBox(e));
  }
  document.title = `${document.getElementById('page-title')?.textContent ?? 'Admin'} · Tollgate`;
  document.getElementById('page-title')?.focus();
}

document.getElementById('logout').addEventListener('click', async () => {
  try {
    await post('/ui/api/logout');
  } catch (e) {
    announce(e.message);
  }
  setSession(null);
  // The next login starts on the keys list, not on a page of the previous session's.
  history.replaceState(null, '', '#/keys');
  route();
});

window.addEventListener('hashchange', route);

async function start() {
  try {
    setSession(await get('/ui/api/session'));
  } catch {
    setSession(null);
  }
  route();
}

start();
