/**
 * @module protocols/rest/event-stream
 * The REST event stream: every event of the durable log as one SSE frame (`id:` is the task's event sequence
 * number, `event:` its kind); a client that reconnects with `Last-Event-ID` gets everything after it, then live
 * events. Following the log is `protocols/http/event-log-stream.ts`.
 */
import type { TaskEvent } from '../../core/task.js';
import { eventLogStreamResponse, SSE_HEADERS, type EventLogFollower } from '../http/event-log-stream.js';
import { eventView } from './representation.js';

const TERMINAL_KINDS = new Set(['completed', 'failed', 'canceled']);

export function sseFrame(e: TaskEvent): string {
  return `id: ${e.seq}\nevent: ${e.kind}\ndata: ${JSON.stringify(eventView(e))}\n\n`;
}

/** `follow` starts following the task's log (`TaskService.openEventLog(...).follow`), called when the stream starts. */
export function eventStreamResponse(follow: () => EventLogFollower, afterSeq: number, options: { retryMs: number; terminal: boolean; signal?: AbortSignal }): Response {
  return eventLogStreamResponse(
    follow,
    afterSeq,
    { batch: 500, headers: SSE_HEADERS, ...(options.signal ? { signal: options.signal } : {}) },
    {
      open: (sink) => sink.send(`retry: ${options.retryMs}\n: belay event stream\n\n`),
      onEvents: (events, sink) => {
        for (const e of events) {
          sink.send(sseFrame(e));
          if (TERMINAL_KINDS.has(e.kind)) return sink.close();
        }
      },
      // The task had already finished and the client has everything.
      onIdle: (sink) => {
        if (options.terminal) sink.close();
      },
    },
  );
}
