/**
 * @module protocols/a2a/message-mapping
 * How an A2A message becomes Belay work.
 *
 * Starting a task (a message without `taskId`): the skill is a task type, chosen in this order:
 *   1. `message.metadata.skillId`, then the request's `metadata.skillId`;
 *   2. the gateway's default skill (`a2a.defaultSkill`), when configured;
 *   3. the only registered task type, when there is exactly one.
 * Otherwise the request is InvalidParams and names the skills. The task's input is the first data part whose value
 * is a JSON object (checked against the task type's schema); a message with only text parts starts the task with
 * `{}` (the type's defaults). `raw` and `url` parts are refused with ContentTypeNotSupported: Belay inputs are JSON.
 *
 * Continuing a task (`taskId` set, task in `input_required`): the answer is the first data part's value; without
 * one, the text parts joined, parsed as JSON when they are JSON, else the text itself. It must match the question's
 * JSON Schema. The version it answers is `message.metadata.belay.inputVersion` when the client echoes it from the
 * question (so a stale answer to an older question is refused), else the task's version as read on arrival.
 */
import { createHash } from 'node:crypto';
import type { Json, JsonObject } from '../../core/task.js';
import type { TaskTypeRegistry } from '../../runtime/task-type.js';
import { A2aError } from './a2a-error.js';
import type { MessageParams } from './request-schemas.js';

/** Output modes Belay produces (artifacts are JSON; status messages carry text and JSON). */
export const OUTPUT_MODES = ['application/json', 'text/plain'] as const;
export const INPUT_MODES = ['application/json', 'text/plain'] as const;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function checkParts(message: MessageParams): void {
  if (message.role !== 'ROLE_USER') throw new A2aError('INVALID_PARAMS', 'A client message has role ROLE_USER', { fieldViolations: [{ field: 'message.role', description: 'must be ROLE_USER' }] });
  for (const [i, p] of message.parts.entries()) {
    if (p.raw !== undefined || p.url !== undefined) {
      throw new A2aError('CONTENT_TYPE_NOT_SUPPORTED', `Part ${i} is a file (${p.raw !== undefined ? 'raw' : 'url'}); Belay accepts text and data parts (${INPUT_MODES.join(', ')})`);
    }
    if (p.mediaType && !INPUT_MODES.includes(p.mediaType.split(';')[0]!.trim().toLowerCase() as (typeof INPUT_MODES)[number])) {
      throw new A2aError('CONTENT_TYPE_NOT_SUPPORTED', `Part ${i} has media type ${p.mediaType}; Belay accepts ${INPUT_MODES.join(', ')}`);
    }
  }
}

/** `acceptedOutputModes` must admit one of Belay's output modes (empty means "anything"). */
export function checkAcceptedOutputModes(modes: readonly string[] | undefined): void {
  if (!modes || modes.length === 0) return;
  const ok = modes.some((m) => {
    const t = m.split(';')[0]!.trim().toLowerCase();
    return t === '*/*' || t === 'application/*' || t === 'text/*' || (OUTPUT_MODES as readonly string[]).includes(t);
  });
  if (!ok) throw new A2aError('CONTENT_TYPE_NOT_SUPPORTED', `Belay produces ${OUTPUT_MODES.join(', ')}; none is in acceptedOutputModes`);
}

export function pickSkill(registry: TaskTypeRegistry, message: MessageParams, requestMetadata: Record<string, unknown> | undefined, defaultSkill: string | undefined): string {
  const named = [message.metadata?.skillId, requestMetadata?.skillId].find((v) => v !== undefined);
  if (named !== undefined) {
    if (typeof named !== 'string') throw new A2aError('INVALID_PARAMS', 'metadata.skillId is a string', { fieldViolations: [{ field: 'message.metadata.skillId', description: 'must be a string' }] });
    return named;
  }
  if (defaultSkill) return defaultSkill;
  const names = [...new Set(registry.list().map((t) => t.name))];
  if (names.length === 1) return names[0]!;
  throw new A2aError('INVALID_PARAMS', `Name the skill in message.metadata.skillId (one of: ${names.join(', ')})`, {
    fieldViolations: [{ field: 'message.metadata.skillId', description: `required: one of ${names.join(', ')}` }],
  });
}

export function inputFrom(message: MessageParams): Json {
  const data = message.parts.find((p) => p.data !== undefined && isObject(p.data));
  return data ? (data.data as Json) : {};
}

export function answerFrom(message: MessageParams): unknown {
  const data = message.parts.find((p) => p.data !== undefined);
  if (data) return data.data;
  const text = message.parts
    .filter((p) => p.text !== undefined)
    .map((p) => p.text)
    .join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The answer version the client echoed from the question, if any. */
export function echoedInputVersion(message: MessageParams): number | undefined {
  const belay = message.metadata?.belay;
  if (!isObject(belay) || belay.inputVersion === undefined) return undefined;
  const v = belay.inputVersion;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new A2aError('INVALID_PARAMS', 'message.metadata.belay.inputVersion is a positive integer', { fieldViolations: [{ field: 'message.metadata.belay.inputVersion', description: 'must be a positive integer' }] });
  }
  return v;
}

/** What is kept of a message in the event log (the durable history). */
export function recordOf(message: MessageParams): Record<string, Json> {
  const m: JsonObject = { messageId: message.messageId, role: 'ROLE_USER', parts: message.parts as unknown as Json };
  if (message.contextId) m.contextId = message.contextId;
  if (message.metadata) m.metadata = message.metadata as JsonObject;
  if (message.extensions?.length) m.extensions = message.extensions;
  if (message.referenceTaskIds?.length) m.referenceTaskIds = message.referenceTaskIds;
  return { message: m };
}

/**
 * The idempotency key of a message that starts a task: unique per (tenant, principal, messageId), so a client that
 * retries a send that timed out gets the task it started instead of a second one. Hashed to bound its length.
 */
export function messageIdempotencyKey(principal: string, messageId: string): string {
  return `a2a:${createHash('sha256').update(`${principal}\n${messageId}`).digest('base64url')}`;
}
