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
import type { Task } from '../../core/task.js';
import type { Principal, TaskService } from '../../service/task-service.js';
import { eventLogStreamResponse, SSE_HEADERS, type SseSink } from '../http/event-log-stream.js';
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

export function taskStreamResponse(
  service: TaskService,
  who: Principal,
  plan: StreamPlan,
  encoding: StreamEncoding,
  options: { heartbeatMs: number; signal?: AbortSignal },
): Response {
  const taskId = plan.task.id;
  const snapshot = plan.task;
  // Artifacts already reported (in the snapshot or since), by id and content.
  const sent = new Map<string, string>(snapshot.artifacts.map((a) => [a.artifactId, JSON.stringify(a)]));
  return eventLogStreamResponse(
    // Each read is authorised again (`listEvents` as the caller); the task's shared tail supplies the wake-ups.
    () => service.followEventLog(taskId, { heartbeatMs: options.heartbeatMs, read: (afterSeq, limit) => service.listEvents(who, taskId, afterSeq, limit) }),
    plan.afterSeq,
    { batch: BATCH, headers: SSE_HEADERS, ...(options.signal ? { signal: options.signal } : {}) },
    {
      open: (sink) => {
        frame(sink, { task: toWireTask(snapshot, { history: plan.history }) }, snapshot.nextSeq - 1);
        if (isTerminal(snapshot.state) || (plan.closeOnInputRequired && snapshot.state === 'input_required')) sink.close();
      },
      onEvents: async (events, sink) => {
        const current = await service.getTask(who, taskId);
        const sendNewArtifacts = (seq: number) => {
          for (const a of current.artifacts) {
            const key = JSON.stringify(a);
            if (sent.get(a.artifactId) === key) continue;
            sent.set(a.artifactId, key);
            frame(sink, { artifactUpdate: { taskId, contextId: current.contextId, artifact: wireArtifact(a), append: false, lastChunk: true } }, seq);
          }
        };
        for (const e of events) {
          // Artifacts committed with a step go before the status that ends or pauses the stream.
          if (TERMINAL_KINDS.has(e.kind) || e.kind === 'input_required') sendNewArtifacts(e.seq);
          const update = statusUpdateFor(current, e);
          if (update) frame(sink, { statusUpdate: update }, e.seq);
          if (TERMINAL_KINDS.has(e.kind) || (e.kind === 'input_required' && plan.closeOnInputRequired)) return sink.close();
        }
        sendNewArtifacts(events.at(-1)!.seq);
      },
      onError: (e, sink) => sink.send(encoding.errorFrame(e)),
    },
  );

  function frame(sink: SseSink, r: WireStreamResponse, seq: number): void {
    sink.send(`id: ${seq}\ndata: ${encoding.data(r)}\n\n`);
  }
}
