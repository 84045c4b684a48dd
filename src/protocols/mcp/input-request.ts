/**
 * @module protocols/mcp/input-request
 * A paused task's question as an MCP elicitation, and the way back. The question is the durable record in the task
 * row (`pendingInput`, with the task `version` an answer must echo); an elicitation is only a rendering of it, so it
 * can be re-sent from any gateway, after any reconnect or restart.
 *
 * 2025-11-25: the server sends `elicitation/create` with related-task metadata. Its JSON-RPC id is not a counter in
 * one process's memory (which is where the SDK parks its resolver, lost on restart and unknown to other gateways) but
 * a self-describing reference `belay-input.<task, key, version>.<nonce>`: whichever gateway receives the client's
 * response can decode it and hand the answer to `TaskService.answer`, which checks the version and the schema.
 * The extension: the same elicitation is listed in `inputRequests` under the key `<question key>@<version>`, and
 * `tasks/update` answers it through the same path.
 */
import { randomBytes } from 'node:crypto';
import type { Json, JsonObject, PendingInput, Task } from '../../core/task.js';

export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';
/** Belay's own metadata on an elicitation: the question key, the version to echo, the deadline and context. */
export const BELAY_INPUT_META = 'dev.belay/input';

export interface InputRef {
  taskId: string;
  key: string;
  version: number;
}

const ID_PREFIX = 'belay-input.';

/** A JSON-RPC id naming the question (unique per send: the nonce keeps two sends of one question distinct). */
export function inputRequestId(ref: InputRef): string {
  const body = Buffer.from(JSON.stringify([ref.taskId, ref.key, ref.version])).toString('base64url');
  return `${ID_PREFIX}${body}.${randomBytes(6).toString('hex')}`;
}

/** The question a response id refers to, or null when the id is not one of ours. */
export function parseInputRequestId(id: unknown): InputRef | null {
  if (typeof id !== 'string' || !id.startsWith(ID_PREFIX) || id.length > 600) return null;
  const [body] = id.slice(ID_PREFIX.length).split('.');
  try {
    const v = JSON.parse(Buffer.from(body ?? '', 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 3 && typeof v[0] === 'string' && typeof v[1] === 'string' && Number.isInteger(v[2])) {
      return { taskId: v[0], key: v[1], version: v[2] as number };
    }
  } catch {
    // not ours
  }
  return null;
}

/** The extension's `inputRequests` key: the question key and the version an answer must echo. */
export function inputKey(ref: Pick<InputRef, 'key' | 'version'>): string {
  return `${ref.key}@${ref.version}`;
}

export function parseInputKey(key: string): Pick<InputRef, 'key' | 'version'> | null {
  const m = /^([A-Za-z0-9_-]{1,64})@(\d{1,15})$/.exec(key);
  return m ? { key: m[1]!, version: Number(m[2]) } : null;
}

type Projection = { requestedSchema: JsonObject; wrapped: boolean };

const PRIMITIVE_KEYS: Record<string, readonly string[]> = {
  boolean: ['type', 'title', 'description', 'default'],
  string: ['type', 'title', 'description', 'minLength', 'maxLength', 'format', 'default', 'enum', 'oneOf'],
  number: ['type', 'title', 'description', 'minimum', 'maximum', 'default'],
  integer: ['type', 'title', 'description', 'minimum', 'maximum', 'default'],
  array: ['type', 'title', 'description', 'minItems', 'maxItems', 'items', 'default'],
};
const FORMATS = new Set(['email', 'uri', 'date', 'date-time']);

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One property in the restricted form-field subset elicitation allows (flat primitives and enum lists), or null. */
function formField(schema: unknown): JsonObject | null {
  if (!isObject(schema) || typeof schema.type !== 'string') return null;
  const keys = PRIMITIVE_KEYS[schema.type];
  if (!keys) return null;
  if (schema.type === 'array') {
    const items = schema.items;
    if (!isObject(items) || items.type !== 'string' || !Array.isArray(items.enum)) return null;
  }
  if (schema.type === 'string' && typeof schema.format === 'string' && !FORMATS.has(schema.format)) {
    const { format: _drop, ...rest } = schema;
    return formField(rest);
  }
  const out: JsonObject = {};
  for (const k of keys) if (schema[k] !== undefined) out[k] = schema[k]!;
  // Safe-integer bounds zod adds to every int say nothing to a person filling a form.
  for (const k of ['minimum', 'maximum'] as const) if (typeof out[k] === 'number' && Math.abs(out[k]) >= Number.MAX_SAFE_INTEGER) delete out[k];
  return out;
}

/**
 * The question's JSON Schema in the subset form elicitation allows: top-level primitive properties. Optional
 * properties outside the subset are left out (the answer is still checked against the full schema when it arrives);
 * a required one makes the question impossible to render as a form (null). A non-object answer is wrapped in
 * `{ value }`.
 */
export function projectSchema(schema: JsonObject): Projection | null {
  if (schema.type === 'object' || isObject(schema.properties)) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
    const fields: JsonObject = {};
    for (const [name, prop] of Object.entries(properties)) {
      const field = formField(prop);
      if (field) fields[name] = field;
      else if (required.includes(name)) return null;
    }
    return { requestedSchema: { type: 'object', properties: fields, ...(required.length ? { required } : {}) }, wrapped: false };
  }
  const field = formField(schema);
  return field ? { requestedSchema: { type: 'object', properties: { value: field }, required: ['value'] }, wrapped: true } : null;
}

/** The text shown to the person answering: the question, its deadline, and a compact form of its context. */
function message(pending: PendingInput): string {
  const deadline = new Date(pending.deadlineAt).toISOString();
  let text = `${pending.question}\n\n(Answer before ${deadline}.)`;
  if (pending.context !== undefined && pending.context !== null) {
    const ctx = JSON.stringify(pending.context);
    text += `\nContext: ${ctx.length > 2000 ? `${ctx.slice(0, 2000)}…` : ctx}`;
  }
  return text;
}

export interface ElicitationParams {
  mode: 'form';
  message: string;
  requestedSchema: JsonObject;
  _meta: JsonObject;
  [key: string]: unknown;
}

/**
 * The elicitation for the task's pending question, tied to the task by related-task metadata. Null when the task
 * waits for nothing, or (`strict`, 2025-11-25) when the schema cannot be rendered as a form; the extension takes any
 * JSON Schema (`strict` false: the full schema goes out when the subset cannot carry it).
 */
export function elicitationFor(task: Task, strict: boolean): ElicitationParams | null {
  const pending = task.pendingInput;
  if (!pending || (task.state !== 'input_required' && task.state !== 'auth_required')) return null;
  const projected = projectSchema(pending.schema);
  if (!projected && strict) return null;
  return {
    mode: 'form',
    message: message(pending),
    requestedSchema: projected ? projected.requestedSchema : pending.schema,
    _meta: {
      [RELATED_TASK_META]: { taskId: task.id },
      [BELAY_INPUT_META]: {
        key: pending.key,
        version: task.version,
        deadline_at: new Date(pending.deadlineAt).toISOString(),
        ...(pending.context === undefined ? {} : { context: pending.context }),
      },
    },
  };
}

/** The answer to hand to the service from an accepted elicitation's content (unwrapping `{ value }`). */
export function answerFromContent(pending: PendingInput | null, content: Record<string, unknown> | undefined): Json {
  const projected = pending ? projectSchema(pending.schema) : null;
  const c = (content ?? {}) as JsonObject;
  return projected?.wrapped ? (c.value ?? null) : c;
}
