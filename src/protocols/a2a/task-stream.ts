/**
 * @module protocols/a2a/task-stream
 * A2A streams (SendStreamingMessage, SubscribeToTask) served from the durable event log, so any gateway process
 * can serve them and a client can reattach after a restart.
 *
 * The first event is always the current Task (with its history). Then every committed event after the snapshot's
 * sequence (or after the client's `Last-Event-ID`, which replays what it missed) becomes a status or artifact
 * update, in log order; artifacts committed with a step are sent before the status that follows them. Each SSE
 * frame carries `id: <event sequence>`. The stream closes at a terminal state, or, for a send stream, at
 * `input_required` (a subscription stays open across it until the task ends). Wake-ups come from the store's
 * notifications; the log is also re-read on every heartbeat (a `: ping` comment), so a lost notification delays an
 * event by one heartbeat and never loses it. Closing a stream never affects the task or other streams.
 */
import { isTerminal } from '../../core/task-state.js';
import type { Task, TaskEvent } from '../../core/task.js';
import type { Principal, TaskService } from '../../service/task-service.js';
import { statusUpdateFor, toWireTask, wireArtifact } from './task-view.js';
import type { WireMessage, WireStreamResponse } from './wire-types.js';

export interface StreamPlan {
  /** The snapshot sent first. */
  task: Task;
  history: WireMessage[];
  /** Events after this sequence number follow the snapshot. */
  afterSeq: number;
  /** Send streams close at input_required; subscriptions stay open until the task ends. */
  closeOnInputRequired: boolean;
}

export interface StreamEncoding {
  /** The `data:` payload of one stream response. */
  data(response: WireStreamResponse): string;
  /** A whole SSE frame reporting an error that ends the stream. */
  errorFrame(error: unknown): string;
}

const TERMINAL_KINDS = new Set(['completed', 'failed', 'canceled']);
const BATCH = 200;
const encoder = new TextEncoder();

export function taskStreamResponse(
  service: TaskService,
  who: Principal,
  plan: StreamPlan,
  encoding: StreamEncoding,
  options: { heartbeatMs: number; signal?: AbortSignal },
): Response {
  const taskId = plan.task.id;
  let closed = false;
  let unwatch: (() => void) | null = null;
  let wake: (() => void) | null = null;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!closed) controller.enqueue(encoder.encode(text));
      };
      const close = () => {
        if (closed) return;
        closed = true;
        unwatch?.();
        wake?.();
        try {
          controller.close();
        } catch {
          // the client went away first
        }
      };
      const frame = (r: WireStreamResponse, seq: number) => send(`id: ${seq}\ndata: ${encoding.data(r)}\n\n`);
      options.signal?.addEventListener('abort', close, { once: true });
      // Watch before the first read, so nothing committed in between is missed.
      unwatch = service.watch(taskId, () => wake?.());

      const sent = new Map<string, string>();
      const sendNewArtifacts = (current: Task, seq: number) => {
        for (const a of current.artifacts) {
          const key = JSON.stringify(a);
          if (sent.get(a.artifactId) === key) continue;
          sent.set(a.artifactId, key);
          frame({ artifactUpdate: { taskId, contextId: current.contextId, artifact: wireArtifact(a), append: false, lastChunk: true } }, seq);
        }
      };

      const snapshot = plan.task;
      for (const a of snapshot.artifacts) sent.set(a.artifactId, JSON.stringify(a));
      frame({ task: toWireTask(snapshot, { history: plan.history }) }, snapshot.nextSeq - 1);
      if (isTerminal(snapshot.state) || (plan.closeOnInputRequired && snapshot.state === 'input_required')) {
        close();
        return;
      }

      void (async () => {
        let last = plan.afterSeq;
        try {
          for (;;) {
            const events: TaskEvent[] = await service.listEvents(who, taskId, last, BATCH);
            if (closed) return;
            if (events.length > 0) {
              const current = await service.getTask(who, taskId);
              for (const e of events) {
                last = e.seq;
                if (TERMINAL_KINDS.has(e.kind)) {
                  sendNewArtifacts(current, e.seq);
                  const update = statusUpdateFor(current, e);
                  if (update) frame({ statusUpdate: update }, e.seq);
                  close();
                  return;
                }
                const update = statusUpdateFor(current, e);
                if (e.kind === 'input_required') sendNewArtifacts(current, e.seq);
                if (update) frame({ statusUpdate: update }, e.seq);
                if (e.kind === 'input_required' && plan.closeOnInputRequired) {
                  close();
                  return;
                }
              }
              sendNewArtifacts(current, last);
              if (events.length === BATCH) continue;
            }
            const timedOut = await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(true), options.heartbeatMs);
              wake = () => {
                clearTimeout(timer);
                resolve(false);
              };
            });
            wake = null;
            if (closed) return;
            if (timedOut) send(': ping\n\n');
          }
        } catch (e) {
          send(encoding.errorFrame(e));
          close();
        }
      })();
    },
    cancel() {
      closed = true;
      unwatch?.();
      wake?.();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' },
  });
}
