/**
 * @module protocols/a2a/request-schemas
 * The A2A request messages Belay accepts, checked before anything runs. Both bindings build the same objects
 * (JSON-RPC from `params`; HTTP+JSON from path, query and body) and validate them here. Unknown members are
 * dropped, as §5.5 asks; a bad member is `-32602` / HTTP 400 with a `google.rpc.BadRequest` naming it.
 */
import { z } from 'zod';
import { A2aError } from './a2a-error.js';

const id = z.string().min(1).max(256);
const jsonObject = z.record(z.string(), z.unknown());

export const PartSchema = z
  .object({
    text: z.string().optional(),
    raw: z.string().optional(),
    url: z.string().optional(),
    data: z.unknown().optional(),
    metadata: jsonObject.optional(),
    filename: z.string().max(1024).optional(),
    mediaType: z.string().max(255).optional(),
  })
  .refine((p) => [p.text, p.raw, p.url, p.data].filter((v) => v !== undefined).length === 1, { message: 'A part has exactly one of text, raw, url or data' });

export const MessageSchema = z.object({
  messageId: id,
  contextId: id.optional(),
  taskId: id.optional(),
  role: z.enum(['ROLE_USER', 'ROLE_AGENT']),
  parts: z.array(PartSchema).min(1).max(100),
  metadata: jsonObject.optional(),
  extensions: z.array(z.string().max(2048)).max(50).optional(),
  referenceTaskIds: z.array(id).max(100).optional(),
});
export type MessageParams = z.infer<typeof MessageSchema>;

export const PushConfigSchema = z.object({
  tenant: z.string().max(256).optional(),
  id: z.string().max(128).optional(),
  taskId: z.string().max(256).optional(),
  url: z.string().min(1).max(2048),
  token: z.string().max(1024).optional(),
  authentication: z.object({ scheme: z.string().min(1).max(64), credentials: z.string().max(4096).optional() }).optional(),
});
export type PushConfigParams = z.infer<typeof PushConfigSchema>;

const historyLength = z.number().int().min(0).max(100_000);

export const SendMessageSchema = z.object({
  tenant: z.string().max(256).optional(),
  message: MessageSchema,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string().max(255)).max(50).optional(),
      taskPushNotificationConfig: PushConfigSchema.optional(),
      historyLength: historyLength.optional(),
      returnImmediately: z.boolean().optional(),
    })
    .optional(),
  metadata: jsonObject.optional(),
});
export type SendMessageParams = z.infer<typeof SendMessageSchema>;

export const GetTaskSchema = z.object({ tenant: z.string().max(256).optional(), id, historyLength: historyLength.optional() });
export type GetTaskParams = z.infer<typeof GetTaskSchema>;

export const ListTasksSchema = z.object({
  tenant: z.string().max(256).optional(),
  contextId: z.string().max(256).optional(),
  status: z.string().max(64).optional(),
  pageSize: z.number().int().min(1, 'pageSize is 1 to 100').max(100, 'pageSize is 1 to 100').optional(),
  pageToken: z.string().max(1024).optional(),
  historyLength: historyLength.optional(),
  statusTimestampAfter: z.string().max(64).optional(),
  includeArtifacts: z.boolean().optional(),
});
export type ListTasksParams = z.infer<typeof ListTasksSchema>;

export const CancelTaskSchema = z.object({ tenant: z.string().max(256).optional(), id, metadata: jsonObject.optional() });
export type CancelTaskParams = z.infer<typeof CancelTaskSchema>;

export const SubscribeSchema = z.object({ tenant: z.string().max(256).optional(), id });
export type SubscribeParams = z.infer<typeof SubscribeSchema>;

export const PushConfigRefSchema = z.object({ tenant: z.string().max(256).optional(), taskId: id, id: z.string().min(1).max(128) });
export type PushConfigRefParams = z.infer<typeof PushConfigRefSchema>;

export const ListPushConfigsSchema = z.object({
  tenant: z.string().max(256).optional(),
  taskId: id,
  pageSize: z.number().int().min(1).max(100).optional(),
  pageToken: z.string().max(1024).optional(),
});
export type ListPushConfigsParams = z.infer<typeof ListPushConfigsSchema>;

export const ExtendedCardSchema = z.object({ tenant: z.string().max(256).optional() });

/**
 * ProtoJSON reads `null` as "the field's default" (unset). Message fields are dropped when null at the top level and
 * inside `message` and `configuration`; values inside `data` and `metadata` are user JSON and stay as they are.
 */
function withoutNulls(params: unknown): unknown {
  const strip = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null));
  };
  const top = strip(params);
  if (typeof top !== 'object' || top === null || Array.isArray(top)) return top;
  const out = { ...(top as Record<string, unknown>) };
  for (const k of ['message', 'configuration', 'authentication']) if (k in out) out[k] = strip(out[k]);
  return out;
}

/** Validates `params` against a schema; failures are InvalidParams with one field violation per issue. */
export function parseParams<T>(schema: z.ZodType<T>, params: unknown): T {
  const r = schema.safeParse(withoutNulls(params ?? {}));
  if (r.success) return r.data;
  const violations = r.error.issues.map((i) => ({ field: i.path.map(String).join('.'), description: i.message }));
  throw new A2aError('INVALID_PARAMS', `Invalid params: ${violations.map((v) => (v.field ? `${v.field}: ${v.description}` : v.description)).join('; ')}`, { fieldViolations: violations });
}
