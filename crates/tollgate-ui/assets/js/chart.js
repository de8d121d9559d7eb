// A bar chart of spend per day, drawn as SVG by hand (no chart library): one bar per UTC day
// of the range, days without spend drawn at zero, each bar titled with its date and amount.

import { usd } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** Every `YYYY-MM-DD` from `start` to `end` (UTC), at most 400 days. */
export function daysBetween(start, end) {
  const out = [];
  let t = Date.parse(`${start}T00:00:00Z`);
  const last = Date.parse(`${end}T00:00:00Z`);
  while (Number.isFinite(t) && t <= last && out.length < 400) {
    out.push(new Date(t).toISOString().slice(0, 10));
    t += 86400000;
  }
  return out;
}

/** The chart of `days` (`[{date, spend}]`, from `/tollgate/spend/summary`) over `start..end`. */
export function spendChart(days, start, end) {
  const spendOf = new Map(days.map((d) => [d.date, d.spend]));
  const dates = daysBetween(start, end);
  const max = Math.max(0, ...dates.map((d) => spendOf.get(d) ?? 0));
  const W = 800; const H = 220; const left = 70; const bottom = 24; const top = 10;
  const plotW = W - left - 10; const plotH = H - top - bottom;
  const bw = dates.length ? plotW / dates.length : plotW;
  const total = dates.reduce((a, d) => a + (spendOf.get(d) ?? 0), 0);
  const svg = s('svg', {
    viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', id: 'spend-chart',
    'aria-label': `Spend per day from ${start} to ${end}: ${usd(total)} in total, at most ${usd(max)} a day`,
  });
  svg.append(s('line', { x1: left, y1: top + plotH, x2: W - 10, y2: top + plotH, class: 'axis' }));
  svg.append(s('text', { x: left - 6, y: top + 10, 'text-anchor': 'end', class: 'tick' }, usd(max)));
  svg.append(s('text', { x: left - 6, y: top + plotH, 'text-anchor': 'end', class: 'tick' }, usd(0)));
  dates.forEach((d, i) => {
    const v = spendOf.get(d) ?? 0;
    const bh = max > 0 ? (v / max) * plotH : 0;
    svg.append(s('rect', {
      x: left + i * bw + bw * 0.1, y: top + plotH - bh, width: Math.max(bw * 0.8, 1), height: bh,
      class: 'bar', 'data-date': d, 'data-spend': v,
    }, s('title', {}, `${d}: ${usd(v)}`)));
  });
  const labelEvery = Math.max(1, Math.ceil(dates.length / 8));
  dates.forEach((d, i) => {
    if (i % labelEvery) return;
    svg.append(s('text', { x: left + i * bw + bw / 2, y: H - 6, 'text-anchor': 'middle', class: 'tick' }, d.slice(5)));
  });
  return svg;
}
