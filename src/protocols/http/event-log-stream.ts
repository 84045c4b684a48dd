/**
 * @module protocols/http/event-log-stream
 * One way to serve a task's durable event log as Server-Sent Events, shared by the REST and A2A fronts. The stream
 * follows the task's log tail (`service/task-log-tail.ts`): it is subscribed to change hints BEFORE the first read
 * (so nothing committed in between is missed), reads the log after the last sequence sent, and waits for a hint or
 * the heartbeat; a hint that arrives while it reads or sends is kept, so the next wait returns at once. Every
 * heartbeat re-reads the log and, when the stream was idle, sends a `: ping` comment, so a lost notification delays
 * an event by at most one heartbeat and never loses it. Streams of the same task at the same sequence share one
 * read per wake-up (the tail's single-flight read), so a commit costs one query however many subscribers follow
 * it; a stream that authorises each read itself (A2A) shares the wake-ups and heartbeats, not the reads. Works on
 * any gateway process. The fronts decide only how events become frames and when the stream ends.
 */
import type { TaskEvent } from '../../core/task.js';
import type { EventLogFollower } from '../../service/task-log-tail.js';

export type { EventLogFollower };

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

/**
 * `follow` is called once, when the stream starts (so it is subscribed before the first read); the follower is
 * closed when the stream ends, whichever side ends it.
 */
export function eventLogStreamResponse(
  follow: () => EventLogFollower,
  afterSeq: number,
  options: { batch: number; signal?: AbortSignal; headers: Record<string, string> },
  handlers: EventLogStreamHandlers,
): Response {
  let follower: EventLogFollower | null = null;
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
          follower?.close();
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
      if (options.signal?.aborted) return sink.close();
      options.signal?.addEventListener('abort', () => sink.close(), { once: true });
      const log = (follower = follow());
      handlers.open?.(sink);
      if (closed) return;
      void (async () => {
        let last = afterSeq;
        try {
          for (;;) {
            const events = await log.read(last, options.batch);
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
            const why = await log.next();
            if (closed || why === 'closed') return;
            if (why === 'heartbeat') sink.send(': ping\n\n');
          }
        } catch (e) {
          handlers.onError?.(e, sink);
          sink.close();
        }
      })();
    },
    cancel() {
      closed = true;
      follower?.close();
    },
  });
  return new Response(stream, { status: 200, headers: options.headers });
}

export const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', connection: 'keep-alive' };
