// The "Create user" / "Edit user" dialog: POST /user/new (user_id, user_email, user_role,
// max_budget, budget_duration, models, password, and the key LiteLLM creates with the user,
// shown once) or POST /user/update for an existing user.

import { post } from './api.js';
import { announce, checkbox, field, select } from './dom.js';
import { durations, formDialog, listOf, numberOf, refocus, str } from './form_dialog.js';
import { showSecret } from './key_form.js';

/** `user_role` values an admin can give (LiteLLM's `LitellmUserRoles`, the ones its UI offers). */
export const ROLES = [
  ['internal_user', 'Internal user'],
  ['internal_user_viewer', 'Internal user (read only)'],
  ['proxy_admin', 'Proxy admin'],
  ['proxy_admin_viewer', 'Proxy admin viewer'],
];

/**
 * Opens the dialog; `existing` (a user object of /user/list or /user/info) edits that user.
 * `onDone` runs after the write (a reload); the focus goes back to `opener`.
 */
export function openUserForm(opener, onDone, existing = null) {
  const e = existing ?? {};
  const editing = Boolean(existing);
  const [idField, id] = field('user-id', 'User ID', { autocomplete: 'off', value: e.user_id ?? '', readonly: editing }, editing ? '' : 'empty = generated');
  const [emailField, email] = field('user-email', 'E-mail', { type: 'email', autocomplete: 'off', value: e.user_email ?? '' });
  const [roleField, role] = select('user-role', 'Role', ROLES, e.user_role ?? 'internal_user');
  const [budgetField, budget] = field('user-budget', 'Max budget (USD)', { type: 'number', min: '0', step: 'any', inputmode: 'decimal', value: str(e.max_budget) }, editing ? 'empty = unchanged' : 'empty = no budget');
  const [durationField, duration] = select('user-duration', 'Budget reset', durations(editing));
  const [modelsField, models] = field('user-models', 'Models', { autocomplete: 'off', value: (e.models ?? []).join(', ') }, 'comma-separated; empty = every model');
  const [passwordField, password] = field('user-password', 'UI password', { type: 'password', autocomplete: 'new-password' }, editing ? 'empty = unchanged' : 'empty = no UI login');
  const fields = [[idField, id], [emailField, email], [roleField, role], [budgetField, budget],
    [durationField, duration], [modelsField, models], [passwordField, password]];
  const [keyField, withKey] = checkbox('user-with-key', 'Also create a virtual key for this user', true);
  if (!editing) fields.push([keyField, withKey]);

  const body = () => {
    const out = {};
    if (id.value.trim()) out.user_id = id.value.trim();
    if (email.value.trim()) out.user_email = email.value.trim();
    out.user_role = role.value;
    const b = numberOf(budget);
    if (b !== undefined) out.max_budget = b;
    if (duration.value) out.budget_duration = duration.value;
    const m = listOf(models);
    if (m.length || editing) out.models = m;
    if (password.value) out.password = password.value;
    return out;
  };

  formDialog({
    id: 'user-dialog',
    title: editing ? `Edit user ${e.user_id}` : 'Create a user',
    fields,
    submitLabel: editing ? 'Save changes' : 'Create user',
    opener,
    onSubmit: async () => {
      if (editing) {
        await post('/user/update', { ...body(), user_id: e.user_id });
        announce(`User ${e.user_id} updated.`);
        return onDone;
      }
      const created = await post('/user/new', { ...body(), auto_create_key: withKey.checked });
      announce(`User ${created.user_id} created.`);
      if (created.key) {
        // once this dialog has closed, the key's secret is shown once in its own
        return () => {
          showSecret(created, async () => {
            await onDone();
            refocus(opener);
          });
          return false;
        };
      }
      return onDone;
    },
  });
}
