/**
 * @module protocols/rest/event-stream
 * Server-Sent Events from the durable event log. `id:` is the task's event sequence number; a client that
 * reconnects with `Last-Event-ID` gets everything after it, then live events. Works on any gateway process:
 * wake-ups come from the store (NOTIFY or polling) and the log is re-read on every wake-up and every heartbeat,
 * so a lost notification delays an event by at most one heartbeat and never loses it.
 */
import type { TaskEvent } from '../../core/task.js';
import { eventView } from './representation.js';

export interface EventSource {
  read(afterSeq: number, limit: number): Promise<TaskEvent[]>;
  watch(onChange: () => void): () => void;
}

const TERMINAL_KINDS = new Set(['completed', 'failed', 'canceled']);
const encoder = new TextEncoder();

export function sseFrame(e: TaskEvent): string {
  return `id: ${e.seq}\nevent: ${e.kind}\ndata: ${JSON.stringify(eventView(e))}\n\n`;
}

export function eventStreamResponse(source: EventSource, afterSeq: number, options: { heartbeatMs: number; retryMs: number; terminal: boolean; signal?: AbortSignal }): Response {
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
          // already closed by the client
        }
      };
      options.signal?.addEventListener('abort', close, { once: true });
      // Watch before the first read, so nothing committed in between is missed.
      unwatch = source.watch(() => wake?.());
      send(`retry: ${options.retryMs}\n: belay event stream\n\n`);
      let last = afterSeq;
      void (async () => {
        try {
          for (;;) {
            const events = await source.read(last, 500);
            for (const e of events) {
              send(sseFrame(e));
              last = e.seq;
              if (TERMINAL_KINDS.has(e.kind)) {
                close();
                return;
              }
            }
            if (closed) return;
            if (events.length === 0 && options.terminal && last >= afterSeq) {
              // The task had already finished and the client has everything.
              close();
              return;
            }
            if (events.length === 500) continue;
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
        } catch {
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
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', connection: 'keep-alive' },
  });
}
