// The login page: the master key, or a username and password (UI_USERNAME / UI_PASSWORD, or an
// internal user's e-mail and password). POST /ui/api/login sets the session cookie.

import { post } from './api.js';
import { h, field, fill, heading } from './dom.js';

/** Renders the login forms into `main`; calls `onLogin(session)` once logged in. */
export function loginView(main, onLogin) {
  const error = h('div', { class: 'error', role: 'alert', id: 'login-error' });
  const submit = async (ev, body) => {
    ev.preventDefault();
    error.textContent = '';
    const buttons = ev.target.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      onLogin(await post('/ui/api/login', body()));
    } catch (e) {
      error.textContent = e.message;
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  };

  const [userField, user] = field('login-username', 'Username', { autocomplete: 'username', required: true }, 'UI_USERNAME, or your e-mail');
  const [pwField, pw] = field('login-password', 'Password', { type: 'password', autocomplete: 'current-password', required: true });
  const userForm = h('form', {
    'aria-labelledby': 'login-user-title',
    onsubmit: (ev) => submit(ev, () => ({ username: user.value, password: pw.value })),
  }, h('h2', { id: 'login-user-title' }, 'With a username and password'), userField, pwField,
  h('button', { type: 'submit', class: 'primary' }, 'Log in'));

  const [keyField, key] = field('login-master-key', 'Master key', { type: 'password', autocomplete: 'off', required: true });
  const keyForm = h('form', {
    'aria-labelledby': 'login-key-title',
    onsubmit: (ev) => submit(ev, () => ({ master_key: key.value })),
  }, h('h2', { id: 'login-key-title' }, 'With the master key'), keyField,
  h('button', { type: 'submit', class: 'primary' }, 'Log in with the master key'));

  fill(main, h('div', { class: 'login' },
    heading('Log in to Tollgate'),
    error,
    h('div', { class: 'panel' }, userForm),
    h('div', { class: 'panel' }, keyForm)));
  user.focus();
}
