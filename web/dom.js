// Tiny DOM helpers: elements from data, never from HTML strings (nothing the API returns is parsed as markup).

const PROPS = new Set(['checked', 'selected', 'disabled', 'value', 'hidden', 'open']);

/** el('a', { href: '#', class: 'x', onclick: fn }, 'text', child, [more, children], null) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (PROPS.has(k)) node[k] = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else node.append(c instanceof Node ? c : String(c));
  }
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

/** Replaces a node's children (null, undefined and false are skipped, arrays flattened). */
export function fill(node, ...children) {
  clear(node);
  append(node, children);
  return node;
}

const STATUS_LABELS = { queued: 'queued', working: 'working', input_required: 'input required', completed: 'completed', failed: 'failed', cancelled: 'cancelled' };

export function badge(status) {
  return el('span', { class: `badge status-${status}`, 'data-status': status }, STATUS_LABELS[status] || status);
}

/** A measured progress bar; without a total it says so instead of inventing a percentage. */
export function progressBar(progress, { compact = false } = {}) {
  const p = progress || {};
  const known = typeof p.current === 'number' && typeof p.total === 'number' && p.total > 0;
  const pct = known ? Math.max(0, Math.min(100, (p.current / p.total) * 100)) : 0;
  const fill = el('div', { class: 'bar-fill' });
  fill.style.width = `${pct}%`;
  const text = known ? `${p.current}/${p.total}` : typeof p.current === 'number' ? String(p.current) : '—';
  return el(
    'div',
    { class: `progress${compact ? ' compact' : ''}`, role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': known ? p.total : null, 'aria-valuenow': known ? p.current : null, 'data-current': p.current ?? '', 'data-total': p.total ?? '' },
    el('div', { class: 'bar' }, fill),
    el('span', { class: 'bar-text' }, text, !compact && p.message ? el('span', { class: 'muted' }, ` · ${p.message}`) : null),
  );
}

export function relativeTime(iso) {
  if (!iso) return '';
  const ms = Date.now() - Date.parse(iso);
  const s = Math.round(Math.abs(ms) / 1000);
  const future = ms < 0;
  const fmt = (n, unit) => (future ? `in ${n} ${unit}` : `${n} ${unit} ago`);
  if (s < 5) return future ? 'in a moment' : 'just now';
  if (s < 60) return fmt(s, 's');
  if (s < 3600) return fmt(Math.round(s / 60), 'min');
  if (s < 86400) return fmt(Math.round(s / 3600), 'h');
  return fmt(Math.round(s / 86400), 'd');
}

export function time(iso, { relative = true } = {}) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  return el('time', { datetime: iso, title: d.toLocaleString() }, relative ? relativeTime(iso) : d.toLocaleString());
}

export function jsonBlock(value, { open = true, summary = null } = {}) {
  const pre = el('pre', { class: 'json' }, JSON.stringify(value, null, 2));
  if (!summary) return pre;
  return el('details', { open }, el('summary', {}, summary), pre);
}
