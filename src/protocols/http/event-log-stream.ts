/**
 * @module protocols/http/event-log-stream
 * One way to serve a task's durable event log as Server-Sent Events, shared by the REST and A2A fronts. It
 * watches for change hints BEFORE the first read (so nothing committed in between is missed), reads the log after
 * the last sequence sent, and sleeps until a hint or the heartbeat; every heartbeat re-reads the log and sends a
 * `: ping` comment, so a lost notification delays an event by at most one heartbeat and never loses it. Works on
 * any gateway process. The fronts decide only how events become frames and when the stream ends.
 */
import type { TaskEvent } from '../../core/task.js';

export interface EventLogSource {
  read(afterSeq: number, limit: number): Promise<TaskEvent[]>;
  watch(onChange: () => void): () => void;
}

export interface SseSink {
  send(text: string): void;
  close(): void;
  readonly closed: boolean;
}

export interface EventLogStreamHandlers {
  /** Sent once before following (a snapshot, a `retry:` line); may close the stream. */
  open?(sink: SseSink): void;
  /** One batch of events in log order; close the sink to end the stream. */
  onEvents(events: TaskEvent[], sink: SseSink): void | Promise<void>;
  /** A read found nothing new; may close the stream (for example, the task had already finished). */
  onIdle?(sink: SseSink): void;
  /** A read or handler failed; the stream ends after this. */
  onError?(error: unknown, sink: SseSink): void;
}

const encoder = new TextEncoder();

export function eventLogStreamResponse(
  source: EventLogSource,
  afterSeq: number,
  options: { heartbeatMs: number; batch: number; signal?: AbortSignal; headers: Record<string, string> },
  handlers: EventLogStreamHandlers,
): Response {
  let unwatch: (() => void) | null = null;
  let wake: (() => void) | null = null;
  let closed = false;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const sink: SseSink = {
        send: (text) => {
          if (!closed) controller.enqueue(encoder.encode(text));
        },
        close: () => {
          if (closed) return;
          closed = true;
          unwatch?.();
          wake?.();
          try {
            controller.close();
          } catch {
            // the client went away first
          }
        },
        get closed() {
          return closed;
        },
      };
      options.signal?.addEventListener('abort', () => sink.close(), { once: true });
      unwatch = source.watch(() => wake?.());
      handlers.open?.(sink);
      if (closed) return;
      void (async () => {
        let last = afterSeq;
        try {
          for (;;) {
            const events = await source.read(last, options.batch);
            if (closed) return;
            if (events.length > 0) {
              last = events.at(-1)!.seq;
              await handlers.onEvents(events, sink);
              if (closed) return;
              if (events.length === options.batch) continue;
            } else {
              handlers.onIdle?.(sink);
              if (closed) return;
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
            if (timedOut) sink.send(': ping\n\n');
          }
        } catch (e) {
          handlers.onError?.(e, sink);
          sink.close();
        }
      })();
    },
    cancel() {
      closed = true;
      unwatch?.();
      wake?.();
    },
  });
  return new Response(stream, { status: 200, headers: options.headers });
}

export const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', connection: 'keep-alive' };
