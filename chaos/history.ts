/**
 * What a chaos run records from OUTSIDE Belay (requests and their answers, event streams, the downstream's receipts)
 * and what it reads from the store at the end. The history checker (`history-checker.ts`) judges the two together.
 */
import type { Json, SideEffectRecord, Task, TaskEvent, Tombstone } from '../src/core/task.js';

/** One HTTP attempt of a create; a logical create is retried with the same Idempotency-Key. */
export interface CreateAttempt {
  at: number;
  /** HTTP status, or `network` when no response arrived (refused, reset, timeout, gateway killed). */
  status: number | 'network';
  taskId?: string;
  replayed?: boolean;
  code?: string;
}

/** A logical create: one (tenant, type, Idempotency-Key) with one body. The harness puts a unique `context_id` in it. */
export interface CreateOp {
  tenant: string;
  type: string;
  key: string;
  /** Unique per logical create; every task carries it, so duplicates are countable in the store. */
  contextId: string;
  attempts: CreateAttempt[];
  /** Effect keys (without the `<taskId>:` prefix) the task applies when it completes, when known. */
  plannedEffects?: string[];
}

export interface CancelOp {
  taskId: string;
  at: number;
  status: number | 'network';
  /** `cancellation` member of a 2xx answer. */
  outcome?: string;
}

export interface InputOp {
  taskId: string;
  at: number;
  /** The version the answer named. */
  version: number;
  status: number | 'network';
  code?: string;
}

/** One SSE connection: what the client sent as Last-Event-ID and what arrived, in order. */
export interface SseConnection {
  taskId: string;
  lastEventId: number | null;
  status: number | 'network';
  events: Array<{ seq: number; kind: string }>;
  /** terminal: the server closed after a terminal event; closed: server closed otherwise; aborted: the client dropped it. */
  end: 'terminal' | 'closed' | 'aborted' | 'error';
}

/** A client following one task across reconnects (each reconnect sends the last id it got). */
export interface SseChain {
  taskId: string;
  connections: SseConnection[];
}

/** What the fake downstream received: every call, with the idempotency key it carried. */
export interface Receipt {
  key: string;
  /** `effects` (the synthetic type's effectUrl, body `{taskId, step, n}`) or `actions/<kind>`. */
  route: string;
  body: Json;
  at: number;
  /** First time this key arrived (the downstream applied it); later calls are deduplicated. */
  fresh: boolean;
}

export interface History {
  creates: CreateOp[];
  cancels: CancelOp[];
  inputs: InputOp[];
  sse: SseChain[];
  receipts: Receipt[];
}

export function emptyHistory(): History {
  return { creates: [], cancels: [], inputs: [], sse: [], receipts: [] };
}

/**
 * One fence change of a task, written by a trigger the harness installs in its scratch database (never part of the
 * product schema). `nextSeq` is the task's `next_seq` right after the change: every event with `seq < nextSeq` was
 * committed before it, every event with `seq >= nextSeq` after it (both live in the same row, so the row lock orders
 * them exactly).
 */
export interface FenceGrant {
  taskId: string;
  fence: number;
  nextSeq: number;
  owner: string | null;
  prevOwner: string | null;
  prevLeaseUntil: number | null;
  leaseUntil: number | null;
  oldState: string;
  newState: string;
  /** The database's clock (the host's real time, unaffected by a worker's skewed clock). */
  dbTime: number;
}

export interface FinalState {
  tasks: Map<string, Task>;
  events: Map<string, TaskEvent[]>;
  effects: Map<string, SideEffectRecord[]>;
  tombstones: Map<string, Tombstone>;
  /** Null when the run recorded no fence log (the checker then uses the weaker ordering check). */
  fenceLog: FenceGrant[] | null;
}

export interface Violation {
  /** I1..I7 (reliability-security.md §1) or a scorecard check id. */
  invariant: string;
  taskId?: string;
  detail: string;
}
