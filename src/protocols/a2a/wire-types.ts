/**
 * @module protocols/a2a/wire-types
 * A2A 1.0 messages as they travel (ProtoJSON of `lf.a2a.v1`: camelCase members, enums as strings, timestamps as
 * ISO 8601 UTC with milliseconds). Only what Belay sends or reads is typed; unknown members are ignored on input.
 */
import type { Json, JsonObject } from '../../core/task.js';

export const A2A_PROTOCOL_VERSION = '1.0';

export type WireTaskState =
  | 'TASK_STATE_UNSPECIFIED'
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_REJECTED'
  | 'TASK_STATE_AUTH_REQUIRED';

export type WireRole = 'ROLE_USER' | 'ROLE_AGENT';

/** Exactly one of `text`, `raw` (base64), `url` or `data` is set. */
export interface WirePart {
  text?: string;
  raw?: string;
  url?: string;
  data?: Json;
  metadata?: JsonObject;
  filename?: string;
  mediaType?: string;
}

export interface WireMessage {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: WireRole;
  parts: WirePart[];
  metadata?: JsonObject;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface WireTaskStatus {
  state: WireTaskState;
  message?: WireMessage;
  timestamp?: string;
}

export interface WireArtifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: WirePart[];
  metadata?: JsonObject;
}

export interface WireTask {
  id: string;
  contextId: string;
  status: WireTaskStatus;
  artifacts?: WireArtifact[];
  history?: WireMessage[];
  metadata?: JsonObject;
}

export interface WireStatusUpdate {
  taskId: string;
  contextId: string;
  status: WireTaskStatus;
  metadata?: JsonObject;
}

export interface WireArtifactUpdate {
  taskId: string;
  contextId: string;
  artifact: WireArtifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: JsonObject;
}

/** One of its members is set: the body of every stream event (and of a push notification). */
export type WireStreamResponse = { task: WireTask } | { message: WireMessage } | { statusUpdate: WireStatusUpdate } | { artifactUpdate: WireArtifactUpdate };

export interface WirePushConfig {
  tenant?: string;
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}

export interface WireListTasksResponse {
  tasks: WireTask[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}
