/**
 * @module protocols/a2a/agent-card
 * The agent card (spec §8): served publicly at `/.well-known/agent-card.json`, with `ETag` (a hash of the card),
 * `Cache-Control: public, max-age=300` and `Last-Modified` (when this gateway built it). It declares both bindings
 * at protocol version 1.0 (JSON-RPC preferred), streaming and push notifications, one skill per registered task type
 * (its latest version), and security schemes matching the configured authentication: HTTP Bearer (an API key or a
 * JWT) unless the gateway runs with `--insecure-no-auth`. The extended card (GetExtendedAgentCard, authenticated)
 * adds a Belay extension listing each task type's versions and input JSON Schema.
 */
import { createHash } from 'node:crypto';
import type { Json, JsonObject } from '../../core/task.js';
import type { TaskTypeRegistry } from '../../runtime/task-type.js';
import { INPUT_MODES, OUTPUT_MODES } from './message-mapping.js';
import { A2A_PROTOCOL_VERSION } from './wire-types.js';

export const JSONRPC_PATH = '/a2a/jsonrpc';
export const HTTP_JSON_PATH = '/a2a/rest';
export const TASK_TYPES_EXTENSION = 'https://belay.dev/a2a/extensions/task-types/v1';

export interface AgentCardOptions {
  /** Where clients reach this gateway (scheme, host, port, no trailing slash). */
  baseUrl: string;
  registry: TaskTypeRegistry;
  auth: { apiKeys: boolean; jwt: boolean; insecure: boolean };
  name?: string;
  description?: string;
  version?: string;
}

export function buildAgentCard(o: AgentCardOptions, extended = false): JsonObject {
  const latest = new Map<string, ReturnType<TaskTypeRegistry['list']>[number]>();
  for (const t of o.registry.list()) latest.set(t.name, t);
  const skills = [...latest.values()].map((t) => ({
    id: t.name,
    name: t.name,
    description: `${t.description ?? t.name} Start it with message.metadata.skillId = "${t.name}" and its input as a data part.`,
    tags: ['belay', 'durable', 'long-running'],
    inputModes: ['application/json'],
    outputModes: [...OUTPUT_MODES],
  }));
  const secured = !o.auth.insecure && (o.auth.apiKeys || o.auth.jwt);
  const card: JsonObject = {
    name: o.name ?? 'Belay',
    description: o.description ?? 'Durable long-running agent tasks: every task survives worker crashes and restarts, pauses for input at the cost of one row, and can be resumed from any gateway.',
    version: o.version ?? '0.1.0',
    supportedInterfaces: [
      { url: `${o.baseUrl}${JSONRPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: `${o.baseUrl}${HTTP_JSON_PATH}`, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: true,
      ...(extended
        ? {
            extensions: [
              {
                uri: TASK_TYPES_EXTENSION,
                description: 'The task types behind the skills: versions and input JSON Schemas.',
                required: false,
                params: {
                  taskTypes: o.registry.list().map((t) => ({ name: t.name, version: t.version, description: t.description ?? null, steps: t.steps.map((s) => s.name), inputSchema: t.inputJsonSchema })) as unknown as Json,
                },
              },
            ],
          }
        : {}),
    },
    defaultInputModes: [...INPUT_MODES],
    defaultOutputModes: [...OUTPUT_MODES],
    skills,
  };
  if (secured) {
    const format = o.auth.apiKeys && o.auth.jwt ? 'API key or JWT' : o.auth.jwt ? 'JWT' : 'API key';
    card.securitySchemes = { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: format, description: `Authorization: Bearer <${format}>` } } };
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return card;
}

/** The card's body and its caching headers. */
export function cardPayload(card: JsonObject, builtAt: number): { body: string; etag: string; lastModified: string } {
  const body = JSON.stringify(card);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, lastModified: new Date(Math.floor(builtAt / 1000) * 1000).toUTCString() };
}
