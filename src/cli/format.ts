/**
 * @module cli/format
 * Plain-text rendering for the CLI: tables, progress bars, compact JSON Schema summaries and example answers.
 */

export function progressBar(current: number | null | undefined, total: number | null | undefined, width = 24): string {
  if (typeof current !== 'number' || typeof total !== 'number' || total <= 0) return `[${'·'.repeat(width)}]   --%`;
  const fraction = Math.min(1, Math.max(0, current / total));
  const filled = Math.round(fraction * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}%`;
}

export interface ProgressLike {
  current: number | null;
  total: number | null;
  message: string | null;
}

export function progressText(p: ProgressLike | null | undefined): string {
  if (!p) return '';
  const counts = typeof p.current === 'number' ? `${p.current}${typeof p.total === 'number' ? `/${p.total}` : ''}` : '';
  return [counts, p.message ?? ''].filter(Boolean).join('  ');
}

/** Left-aligned columns, the last one unpadded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

type Schema = Record<string, any>;

/** `{approved: boolean, keep?: string[]}`: a JSON Schema in one line, for a terminal. */
export function schemaSummary(schema: Schema | null | undefined, depth = 0): string {
  if (!schema || typeof schema !== 'object' || depth > 4) return 'any';
  if (Array.isArray(schema.enum)) return schema.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return alternatives.map((s: Schema) => schemaSummary(s, depth + 1)).join(' | ');
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type;
  if (type === 'object' || (schema.properties && !type)) {
    const required = new Set<string>(Array.isArray(schema.required) ? schema.required : []);
    const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${schemaSummary(v, depth + 1)}`);
    return `{${props.join(', ')}}`;
  }
  if (type === 'array') return `${schemaSummary(schema.items, depth + 1)}[]`;
  return typeof type === 'string' ? type : 'any';
}

/** A minimal valid-looking answer: required fields only, first enum value, booleans true. */
export function exampleValue(schema: Schema | null | undefined, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 4) return null;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives) && alternatives.length) return exampleValue(alternatives[0], depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'string':
      return '...';
    case 'array':
      return [];
    case 'null':
      return null;
    default: {
      const required: string[] = Array.isArray(schema.required) ? schema.required : [];
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(required.filter((k) => k in props).map((k) => [k, exampleValue(props[k], depth + 1)]));
    }
  }
}

/** Single-quoted for a POSIX shell. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function shortTime(iso: string | null | undefined): string {
  if (!iso) return '';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
