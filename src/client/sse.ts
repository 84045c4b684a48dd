/**
 * @module client/sse
 * A small Server-Sent Events parser following the WHATWG HTML "event stream interpretation" rules: UTF-8 with an
 * optional BOM, lines ending in CRLF, LF or CR (also when a CRLF is split across chunks), `:` comments, a single
 * optional space after the colon, multi-line `data`, `id` values containing NUL ignored, `retry` only as digits,
 * an event dispatched at a blank line and only when it has data, and an unfinished event at the end of the stream
 * discarded (so a cut connection never yields half an event).
 */

export interface SseMessage {
  /** The last event ID after this event (persists across events, as in EventSource). */
  id: string;
  /** Whether this event carried an `id` field itself. */
  hasId: boolean;
  event: string;
  data: string;
}

export interface SseHandlers {
  onEvent(message: SseMessage): void;
  onRetry?(ms: number): void;
  onComment?(text: string): void;
}

export class SseParser {
  private buffer = '';
  private started = false;
  /** A chunk ended in CR: a LF at the start of the next chunk belongs to it. */
  private pendingCr = false;
  private data: string[] = [];
  private hasData = false;
  private eventType = '';
  private lastEventId = '';
  private sawId = false;

  constructor(
    private readonly handlers: SseHandlers,
    initialLastEventId = '',
  ) {
    this.lastEventId = initialLastEventId;
  }

  /** Feeds decoded text. */
  feed(chunk: string): void {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    let start = 0;
    for (;;) {
      const cr = this.buffer.indexOf('\r', start);
      const lf = this.buffer.indexOf('\n', start);
      if (cr === -1 && lf === -1) break;
      let end: number;
      let next: number;
      if (lf !== -1 && (cr === -1 || lf < cr)) {
        end = lf;
        next = lf + 1;
      } else if (cr === this.buffer.length - 1) {
        // CR at the very end: the line ends here; a LF may follow in the next chunk.
        end = cr;
        next = cr + 1;
        this.pendingCr = true;
      } else {
        end = cr;
        next = this.buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      }
      this.line(this.buffer.slice(start, end));
      start = next;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** The stream ended: whatever event was not terminated by a blank line is discarded. */
  end(): void {
    this.buffer = '';
    this.pendingCr = false;
    this.data = [];
    this.hasData = false;
    this.eventType = '';
    this.sawId = false;
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) {
      this.handlers.onComment?.(line.slice(1).replace(/^ /, ''));
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.eventType = value;
        break;
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'id':
        if (!value.includes('\u0000')) {
          this.lastEventId = value;
          this.sawId = true;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.handlers.onRetry?.(Number(value));
        break;
      default:
        // unknown fields are ignored
        break;
    }
  }

  private dispatch(): void {
    const hasData = this.hasData;
    const message: SseMessage = { id: this.lastEventId, hasId: this.sawId, event: this.eventType || 'message', data: this.data.join('\n') };
    this.data = [];
    this.hasData = false;
    this.eventType = '';
    this.sawId = false;
    if (hasData) this.handlers.onEvent(message);
  }
}

/**
 * Reads an SSE body as an async iterator of messages. Ends when the stream ends; throws when the stream errors.
 * Cancels the body when the consumer stops early.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  handlers: { onRetry?(ms: number): void; onComment?(text: string): void } = {},
): AsyncGenerator<SseMessage, void, undefined> {
  const queue: SseMessage[] = [];
  const parser = new SseParser({ onEvent: (m) => queue.push(m), ...handlers });
  const decoder = new TextDecoder('utf-8');
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        parser.feed(decoder.decode());
        parser.end();
        done = true;
        break;
      }
      parser.feed(decoder.decode(r.value, { stream: true }));
      while (queue.length > 0) yield queue.shift()!;
    }
    while (queue.length > 0) yield queue.shift()!;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
