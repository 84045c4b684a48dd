// Forms generated from a JSON Schema (the task types' input schemas and the questions' answer schemas):
// objects (nested fieldsets), booleans, strings (with formats and patterns), numbers and integers (with bounds),
// enums, arrays of strings, numbers or enum values; anything else gets a JSON text area. The server validates again:
// its 422 issues are shown next to the fields they name.

import { el } from './dom.js';

let counter = 0;

const humanize = (key) =>
  String(key)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .replace(/^./, (c) => c.toUpperCase());

/** The schema without a `null` alternative (`anyOf: [X, {type: null}]` is an optional X). */
function unwrapNullable(schema) {
  const alts = schema && (schema.anyOf || schema.oneOf);
  if (Array.isArray(alts)) {
    const rest = alts.filter((s) => !(s && s.type === 'null'));
    if (rest.length === 1) return { ...rest[0], title: schema.title || rest[0].title, description: schema.description || rest[0].description, default: schema.default ?? rest[0].default };
  }
  if (schema && Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    if (types.length === 1) return { ...schema, type: types[0] };
  }
  return schema || {};
}

function typeOf(schema) {
  if (Array.isArray(schema.enum)) return 'enum';
  if (schema.const !== undefined) return 'const';
  if (schema.type) return schema.type;
  if (schema.properties) return 'object';
  return 'json';
}

/** Builds a field for `schema` at `path`; returns { node, read(): {value, set, errors}, fields: Map(path -> wrapper) }. */
function field(schema, path, { required, label, initial, fields }) {
  schema = unwrapNullable(schema);
  const type = typeOf(schema);
  const id = `sf-${++counter}`;
  const name = path.join('.') || 'value';
  const title = schema.title || (label !== undefined ? humanize(label) : '');
  const hint = schema.description ? el('div', { class: 'hint' }, schema.description) : null;
  const errorBox = el('div', { class: 'field-error', role: 'alert' });
  const start = initial !== undefined ? initial : schema.default;
  const wrap = (control, opts = {}) => {
    const labelNode = title
      ? el('label', { for: opts.labelFor === false ? null : id, class: 'field-label' }, title, required ? el('span', { class: 'req', title: 'required' }, ' *') : null)
      : null;
    const node = el('div', { class: `field field-${type}`, 'data-path': name }, opts.inline ? [control, labelNode] : [labelNode, control], hint, errorBox);
    fields.set(name, { node, errorBox });
    return node;
  };

  if (type === 'object') {
    const props = schema.properties || {};
    const req = new Set(Array.isArray(schema.required) ? schema.required : []);
    const children = Object.entries(props).map(([key, sub]) => ({
      key,
      ...field(sub, [...path, key], { required: req.has(key), label: key, initial: start && typeof start === 'object' ? start[key] : undefined, fields }),
    }));
    const extra = schema.additionalProperties && !Object.keys(props).length;
    if (extra) return field({ ...schema, type: undefined, properties: undefined }, path, { required, label, initial, fields });
    const body = children.map((c) => c.node);
    const node = path.length === 0 ? el('div', { class: 'schema-object' }, body) : el('fieldset', { class: 'schema-object nested' }, el('legend', {}, title || humanize(label)), hint, body, errorBox);
    if (path.length) fields.set(name, { node, errorBox });
    return {
      node,
      read() {
        const out = {};
        const errors = [];
        for (const c of children) {
          const r = c.read();
          errors.push(...r.errors);
          if (r.set) out[c.key] = r.value;
        }
        const set = required || Object.keys(out).length > 0;
        return { value: out, set, errors };
      },
    };
  }

  if (type === 'boolean') {
    if (!required && start === undefined) {
      // Unset, yes or no: an optional boolean without a default must be able to stay unset.
      const select = el('select', { id, name }, el('option', { value: '' }, '—'), el('option', { value: 'true' }, 'Yes'), el('option', { value: 'false' }, 'No'));
      return { node: wrap(select), read: () => ({ value: select.value === 'true', set: select.value !== '', errors: [] }) };
    }
    const box = el('input', { id, name, type: 'checkbox', checked: start === true });
    return { node: wrap(el('span', { class: 'check' }, box), { inline: true }), read: () => ({ value: box.checked, set: true, errors: [] }) };
  }

  if (type === 'enum' || type === 'const') {
    const values = type === 'const' ? [schema.const] : schema.enum;
    const select = el('select', { id, name }, !required || start === undefined ? el('option', { value: '' }, required ? 'Choose…' : '—') : null, values.map((v, i) => el('option', { value: String(i), selected: start !== undefined && JSON.stringify(start) === JSON.stringify(v) }, typeof v === 'string' ? v : JSON.stringify(v))));
    return {
      node: wrap(select),
      read() {
        if (select.value === '') return { value: undefined, set: false, errors: required ? [[name, 'choose a value']] : [] };
        return { value: values[Number(select.value)], set: true, errors: [] };
      },
    };
  }

  if (type === 'integer' || type === 'number') {
    const input = el('input', {
      id,
      name,
      type: 'number',
      step: type === 'integer' ? (schema.multipleOf ?? 1) : (schema.multipleOf ?? 'any'),
      min: schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum : null),
      max: schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum : null),
      value: typeof start === 'number' ? String(start) : '',
      placeholder: schema.default !== undefined ? `default ${schema.default}` : '',
    });
    return {
      node: wrap(input),
      read() {
        const raw = input.value.trim();
        if (raw === '') return { value: undefined, set: false, errors: required ? [[name, 'required']] : [] };
        const n = Number(raw);
        if (!Number.isFinite(n)) return { value: undefined, set: false, errors: [[name, 'must be a number']] };
        if (type === 'integer' && !Number.isInteger(n)) return { value: undefined, set: false, errors: [[name, 'must be a whole number']] };
        if (typeof schema.minimum === 'number' && n < schema.minimum) return { value: n, set: true, errors: [[name, `must be ≥ ${schema.minimum}`]] };
        if (typeof schema.maximum === 'number' && n > schema.maximum) return { value: n, set: true, errors: [[name, `must be ≤ ${schema.maximum}`]] };
        return { value: n, set: true, errors: [] };
      },
    };
  }

  if (type === 'string') {
    const long = (schema.maxLength ?? 0) > 200 || schema.format === 'textarea';
    const inputType = { uri: 'url', email: 'email', date: 'date', 'date-time': 'datetime-local' }[schema.format] || 'text';
    const input = long
      ? el('textarea', { id, name, rows: 4, maxlength: schema.maxLength ?? null }, typeof start === 'string' ? start : '')
      : el('input', { id, name, type: inputType, value: typeof start === 'string' ? start : '', minlength: schema.minLength ?? null, maxlength: schema.maxLength ?? null, pattern: schema.pattern ?? null, placeholder: schema.format === 'uri' ? 'https://…' : '' });
    return {
      node: wrap(input),
      read() {
        let v = input.value;
        if (v === '') return { value: undefined, set: false, errors: required ? [[name, 'required']] : [] };
        if (inputType === 'datetime-local') v = new Date(v).toISOString();
        if (schema.pattern && !new RegExp(schema.pattern, 'u').test(v)) return { value: v, set: true, errors: [[name, `must match ${schema.pattern}`]] };
        return { value: v, set: true, errors: [] };
      },
    };
  }

  if (type === 'array') {
    const items = unwrapNullable(schema.items || {});
    const itemType = typeOf(items);
    const initialItems = Array.isArray(start) ? start : [];
    if (itemType === 'enum') {
      const boxes = items.enum.map((v, i) => {
        const box = el('input', { type: 'checkbox', id: `${id}-${i}`, name, value: String(i), checked: initialItems.some((x) => JSON.stringify(x) === JSON.stringify(v)) });
        return { v, box, node: el('label', { class: 'check-option', for: `${id}-${i}` }, box, ' ', typeof v === 'string' ? v : JSON.stringify(v)) };
      });
      return {
        node: wrap(el('div', { class: 'check-group', id }, boxes.map((b) => b.node)), { labelFor: false }),
        read() {
          const value = boxes.filter((b) => b.box.checked).map((b) => b.v);
          return { value, set: required || value.length > 0, errors: [] };
        },
      };
    }
    if (itemType === 'string' || itemType === 'integer' || itemType === 'number') {
      const area = el('textarea', { id, name, rows: 3, placeholder: 'one per line' }, initialItems.join('\n'));
      const node = wrap(area);
      node.querySelector('.field-label')?.append(el('span', { class: 'muted' }, ' (one per line)'));
      return {
        node,
        read() {
          const lines = area.value
            .split('\n')
            .map((s) => s.trim())
            .filter(Boolean);
          const value = itemType === 'string' ? lines : lines.map(Number);
          const errors = itemType === 'string' ? [] : value.some((n) => !Number.isFinite(n) || (itemType === 'integer' && !Number.isInteger(n))) ? [[name, 'one number per line']] : [];
          if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) errors.push([name, `at most ${schema.maxItems} items`]);
          if (typeof schema.minItems === 'number' && value.length < schema.minItems) errors.push([name, `at least ${schema.minItems} items`]);
          return { value, set: required || value.length > 0, errors };
        },
      };
    }
  }

  // Anything else: JSON, parsed on submit.
  const area = el('textarea', { id, name, rows: 4, class: 'mono', placeholder: 'JSON' }, start !== undefined ? JSON.stringify(start, null, 2) : '');
  const node = wrap(area);
  node.querySelector('.field-label')?.append(el('span', { class: 'muted' }, ' (JSON)'));
  return {
    node,
    read() {
      if (area.value.trim() === '') return { value: undefined, set: false, errors: required ? [[name, 'required']] : [] };
      try {
        return { value: JSON.parse(area.value), set: true, errors: [] };
      } catch (e) {
        return { value: undefined, set: false, errors: [[name, `not valid JSON: ${e.message}`]] };
      }
    },
  };
}

/**
 * A form body for `schema`. `read()` returns { value, errors: [[path, message]] }; `showErrors(issues)` places
 * errors (local ones, or the server's 422 `issues` with paths like `a.b`, `/a/b` or ['a', 'b']) next to fields.
 */
export function schemaForm(schema, { initial } = {}) {
  const fields = new Map();
  const root = unwrapNullable(schema || {});
  const isObject = typeOf(root) === 'object';
  const top = field(isObject ? root : root, isObject ? [] : [], { required: true, label: isObject ? undefined : 'answer', initial, fields });
  const general = el('div', { class: 'form-error', role: 'alert' });
  const node = el('div', { class: 'schema-form' }, top.node, general);
  if (isObject && Object.keys(root.properties || {}).length === 0) top.node.append(el('p', { class: 'muted' }, 'No input fields.'));

  function showErrors(issues) {
    general.textContent = '';
    for (const f of fields.values()) {
      f.errorBox.textContent = '';
      f.node.classList.remove('invalid');
    }
    const unplaced = [];
    for (const issue of issues) {
      const [rawPath, message] = Array.isArray(issue) ? issue : [issue.path, issue.message];
      const path = Array.isArray(rawPath) ? rawPath.join('.') : String(rawPath ?? '').replace(/^\//, '').replace(/\//g, '.');
      const target = fields.get(path || 'value');
      if (target) {
        target.errorBox.textContent = message;
        target.node.classList.add('invalid');
      } else unplaced.push(path ? `${path}: ${message}` : message);
    }
    general.textContent = unplaced.join('; ');
  }

  return {
    node,
    read() {
      const r = top.read();
      showErrors(r.errors);
      return { value: r.set ? r.value : isObject ? {} : null, errors: r.errors };
    },
    showErrors,
  };
}
