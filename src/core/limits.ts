import { BelayError } from './errors.js';

/**
 * @module core/limits
 * Bounds checked before anything is persisted. `JSON.stringify` of a 100,000-deep object throws, so a deep
 * payload accepted at the edge would crash a worker later (a "poison task"); depth is capped here instead.
 */

export interface JsonLimits {
  maxDepth: number;
  maxBytes: number;
  maxStringLength: number;
  maxArrayLength: number;
  maxKeys: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = {
  maxDepth: 64,
  maxBytes: 1_048_576,
  maxStringLength: 262_144,
  maxArrayLength: 100_000,
  maxKeys: 10_000,
};

/**
 * Walks a value iteratively (no recursion, so it cannot overflow the stack), rejects what JSON cannot carry
 * faithfully, and returns its serialisation.
 * @throws BelayError PAYLOAD_TOO_DEEP | PAYLOAD_TOO_LARGE | INVALID_JSON
 */
export function serializeJson(value: unknown, what: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): string {
  checkJsonShape(value, what, limits);
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new BelayError('INVALID_JSON', `${what} cannot be serialised: ${(e as Error).message}`, { cause: e });
  }
  if (text === undefined) throw new BelayError('INVALID_JSON', `${what} is not a JSON value`);
  if (Buffer.byteLength(text) > limits.maxBytes) {
    throw new BelayError('PAYLOAD_TOO_LARGE', `${what} is larger than ${limits.maxBytes} bytes`, { details: { limit_bytes: limits.maxBytes } });
  }
  return text;
}

export function checkJsonShape(value: unknown, what: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): void {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 0 }];
  const seen = new Set<object>();
  let keys = 0;
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    // undefined is dropped by JSON.stringify in objects (optional members), so it is allowed.
    if (v === null || v === undefined || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new BelayError('INVALID_JSON', `${what} contains a non-finite number`);
      continue;
    }
    if (typeof v === 'string') {
      if (v.length > limits.maxStringLength) {
        throw new BelayError('PAYLOAD_TOO_LARGE', `${what} contains a string longer than ${limits.maxStringLength} characters`);
      }
      continue;
    }
    if (typeof v !== 'object') throw new BelayError('INVALID_JSON', `${what} contains a ${typeof v}, which JSON cannot carry`);
    if (depth >= limits.maxDepth) {
      throw new BelayError('PAYLOAD_TOO_DEEP', `${what} is nested deeper than ${limits.maxDepth} levels`, { details: { max_depth: limits.maxDepth } });
    }
    if (seen.has(v)) throw new BelayError('INVALID_JSON', `${what} contains a cycle`);
    seen.add(v);
    if (Array.isArray(v)) {
      if (v.length > limits.maxArrayLength) {
        throw new BelayError('PAYLOAD_TOO_LARGE', `${what} contains an array longer than ${limits.maxArrayLength}`);
      }
      for (const item of v) stack.push({ v: item, depth: depth + 1 });
      continue;
    }
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null && !(v instanceof Date)) {
      throw new BelayError('INVALID_JSON', `${what} contains a non-plain object`);
    }
    for (const key of Object.keys(v)) {
      if (key === '__proto__') throw new BelayError('INVALID_JSON', `${what} contains a "__proto__" key`);
      if (++keys > limits.maxKeys) throw new BelayError('PAYLOAD_TOO_LARGE', `${what} has more than ${limits.maxKeys} keys`);
      stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1 });
    }
  }
}
