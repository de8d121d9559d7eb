// A modal form dialog shared by the users, end users, budget tiers, tags and team member
// pages: labelled fields, the API's error shown in words inside the dialog, Escape or Cancel
// to close, and the focus given back to the button that opened it (or to the page title when
// that button was redrawn meanwhile). Also the small input readers those forms share.

import { errorBox, h } from './dom.js';

/** Budget windows offered by every form (LiteLLM's `budget_duration` values). */
export const DURATIONS = [['', 'No reset'], ['1h', 'Every hour'], ['1d', 'Every day'], ['7d', 'Every 7 days'], ['30d', 'Every 30 days'], ['1mo', 'Every month']];

/** The choices of a "Budget reset" select: an edit starts on "Unchanged" rather than "No reset". */
export function durations(editing) {
  return editing ? [['', 'Unchanged'], ...DURATIONS.slice(1)] : DURATIONS;
}

/** A number input's value, or undefined when empty. */
export function numberOf(input) {
  return input.value.trim() === '' ? undefined : Number(input.value);
}

/** A comma-separated input as a list of trimmed, non-empty entries. */
export function listOf(input) {
  return input.value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** A number as an input's value ('' for none). */
export function str(v) {
  return typeof v === 'number' ? String(v) : '';
}

/** Puts the entries of `pairs` (`[name, value]`) whose value is not undefined into `out`. */
export function setDefined(out, pairs) {
  for (const [k, v] of pairs) if (v !== undefined) out[k] = v;
  return out;
}

/** Gives the focus to `el` when it is still on the page, else to the page title. */
export function refocus(el) {
  if (el?.isConnected) el.focus();
  else document.getElementById('page-title')?.focus();
}

/**
 * Opens a modal form. `fields`: the `[wrapper, input]` pairs of `field()` / `select()` (the
 * first input gets the focus); `onSubmit()` does the API call and may return a function to run
 * once the dialog has closed (a reload; when it returns `false` it has placed the focus
 * itself); a thrown error is shown in the dialog, which stays open. `opener` gets the focus
 * back on close.
 */
export function formDialog({ id, title, fields, submitLabel, onSubmit, opener, note = null }) {
  const dialog = h('dialog', { id, 'aria-labelledby': `${id}-title` });
  const errors = h('div');
  const submit = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  let submitted = false;
  const form = h('form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      errors.replaceChildren();
      submit.disabled = true;
      let after = null;
      try {
        after = await onSubmit();
      } catch (err) {
        errors.append(errorBox(err));
        submit.disabled = false;
        return;
      }
      submitted = true;
      dialog.close();
      const placed = typeof after === 'function' ? await after() : undefined;
      if (placed !== false) refocus(opener);
    },
  },
  h('h2', { id: `${id}-title` }, title),
  note,
  errors,
  h('div', { class: 'grid' }, fields.map(([wrapper]) => wrapper)),
  h('div', { class: 'row' }, submit, h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel')));
  dialog.append(form);
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (!submitted) refocus(opener);
  });
  document.body.append(dialog);
  dialog.showModal();
  fields.find(([, input]) => !input.readOnly && !input.disabled)?.[1].focus();
  return dialog;
}

/**
 * Runs `action()` after a `window.confirm(question)`, errors into `errors`, then `reload()`;
 * the focus then goes to the page title (the row acted on is gone).
 */
export async function confirmed(question, action, errors, reload) {
  errors.replaceChildren();
  if (!window.confirm(question)) return;
  try {
    await action();
    await reload();
    refocus(null);
  } catch (e) {
    errors.append(errorBox(e));
  }
}
