// The spend page: a date range and a grouping (key, team, model, end user, tag, day) read from
// GET /tollgate/spend/summary, which the gateway sums in SQL; the browser never loads spend
// logs. Shows the totals, a per-day SVG chart and a table of groups, largest first.

import { get } from './api.js';
import { errorBox, fill, field, h, heading, select, usd } from './dom.js';
import { spendChart } from './chart.js';

const GROUPS = [
  ['api_key', 'Key'], ['team', 'Team'], ['model', 'Model'], ['end_user', 'End user'],
  ['tag', 'Tag'], ['day', 'Day'],
];

function isoDay(t) {
  return new Date(t).toISOString().slice(0, 10);
}

function table(by, groups) {
  const name = GROUPS.find(([v]) => v === by)?.[1] ?? 'Group';
  return h('table', { id: 'spend-table' },
    h('caption', { class: 'visually-hidden' }, `Spend by ${name.toLowerCase()}`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, name),
      ['Spend (USD)', 'Tokens', 'Requests'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
    h('tbody', {}, groups.length
      ? groups.map((g) => h('tr', { 'data-group': g.group ?? '' },
        h('td', { class: g.group && g.label === g.group && by === 'api_key' ? 'secret' : '' }, g.label ?? '(none)'),
        h('td', { class: 'num', 'data-spend': g.spend }, usd(g.spend)),
        h('td', { class: 'num' }, String(g.total_tokens)),
        h('td', { class: 'num' }, String(g.requests))))
      : h('tr', {}, h('td', { colspan: '4' }, 'No spend in this range.'))));
}

/** Renders the spend page into `main` (default range: the last 30 days, UTC). */
export async function spendView(main) {
  const today = isoDay(Date.now());
  const [startField, start] = field('spend-start', 'From', { type: 'date', value: isoDay(Date.now() - 29 * 86400000), required: true });
  const [endField, end] = field('spend-end', 'To', { type: 'date', value: today, required: true });
  const [byField, by] = select('spend-by', 'Group by', GROUPS, 'api_key');
  const out = h('div', { id: 'spend-out', 'aria-live': 'polite' });
  const load = async () => {
    fill(out, h('p', { class: 'loading' }, 'Loading…'));
    try {
      const s = await get('/tollgate/spend/summary', { start_date: start.value, end_date: end.value, group_by: by.value });
      fill(out,
        h('dl', { class: 'facts panel' },
          h('dt', {}, 'Total spend'), h('dd', { id: 'spend-total', 'data-spend': s.total_spend }, usd(s.total_spend)),
          h('dt', {}, 'Requests'), h('dd', {}, String(s.requests)),
          h('dt', {}, 'Tokens'), h('dd', {}, String(s.total_tokens))),
        h('figure', { class: 'chart-wrap' }, spendChart(s.days, start.value, end.value),
          h('figcaption', {}, `Spend per day (UTC), ${start.value} to ${end.value}`)),
        h('div', { class: 'table-wrap' }, table(s.group_by, s.groups)));
    } catch (e) {
      fill(out, errorBox(e));
    }
  };
  const form = h('form', {
    class: 'bar', 'aria-label': 'Spend range',
    onsubmit: (ev) => { ev.preventDefault(); load(); },
  }, startField, endField, byField, h('button', { type: 'submit', class: 'primary' }, 'Show'));
  by.addEventListener('change', load);
  fill(main, heading('Spend'), form, out);
  await load();
}
