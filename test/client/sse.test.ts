/**
 * The client's SSE parser against the WHATWG event-stream rules, including every way a stream can be chunked.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readSse, SseParser, type SseMessage } from '../../src/client/sse.js';

function parseAll(chunks: string[]): { events: SseMessage[]; retries: number[]; comments: string[] } {
  const events: SseMessage[] = [];
  const retries: number[] = [];
  const comments: string[] = [];
  const p = new SseParser({ onEvent: (m) => events.push(m), onRetry: (ms) => retries.push(ms), onComment: (c) => comments.push(c) });
  for (const c of chunks) p.feed(c);
  p.end();
  return { events, retries, comments };
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
}

async function collect(body: ReadableStream<Uint8Array>): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const m of readSse(body)) out.push(m);
  return out;
}

describe('SSE parser', () => {
  it('follows the field rules', () => {
    const { events, retries, comments } = parseAll([
      '\uFEFFretry: 2000\n: hello\n\n',
      'id: 1\nevent: progress\ndata: {"a":1}\n\n',
      'data:no space\ndata:  two spaces\n\n', // only one leading space is stripped
      'id: 2\ndata\n\n', // a field with no colon: data is ""
      'event: skipped\n\n', // no data: not dispatched
      'id: bad\u0000id\ndata: x\n\n', // an id with NUL is ignored; the last id persists
      'retry: soon\nfoo: bar\ndata: y\n\n',
      'data: unfinished',
    ]);
    expect(retries).toEqual([2000]);
    expect(comments).toEqual(['hello']);
    expect(events).toEqual([
      { id: '1', hasId: true, event: 'progress', data: '{"a":1}' },
      { id: '1', hasId: false, event: 'message', data: 'no space\n two spaces' },
      { id: '2', hasId: true, event: 'message', data: '' },
      { id: '2', hasId: false, event: 'message', data: 'x' },
      { id: '2', hasId: false, event: 'message', data: 'y' },
    ]);
  });

  it('treats CRLF, CR and LF alike, also when a CRLF is split between chunks', () => {
    const a = parseAll(['id: 1\r', '\ndata: a\r', '\n\r', '\nid: 2\rdata: b\r\r']);
    expect(a.events.map((e) => [e.id, e.data])).toEqual([
      ['1', 'a'],
      ['2', 'b'],
    ]);
  });

  it('parses the same events however the bytes are split and whatever the line endings', async () => {
    const eventArb = fc.record({
      id: fc.integer({ min: 1, max: 1_000_000 }).map(String),
      event: fc.constantFrom('progress', 'completed', 'input_required'),
      data: fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, '')), { minLength: 1, maxLength: 3 }),
      comment: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { maxLength: 8 }), fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 12 }), fc.boolean(), async (events, eol, cuts, bom) => {
        let text = bom ? '\uFEFF' : '';
        text += `retry: 1000${eol}`;
        for (const e of events) {
          if (e.comment) text += `: ping${eol}`;
          text += `id: ${e.id}${eol}event: ${e.event}${eol}`;
          for (const d of e.data) text += `data: ${d}${eol}`;
          text += eol;
        }
        const bytes = new TextEncoder().encode(text);
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
        const chunks: Uint8Array[] = [];
        let prev = 0;
        for (const p of [...points, bytes.length]) {
          chunks.push(bytes.subarray(prev, p));
          prev = p;
        }
        const got = await collect(streamOf(chunks));
        expect(got).toEqual(events.map((e) => ({ id: e.id, hasId: true, event: e.event, data: e.data.join('\n') })));
      }),
      { numRuns: 300 },
    );
  });

  it('discards an event cut off before its blank line', async () => {
    const enc = new TextEncoder();
    const got = await collect(streamOf([enc.encode('id: 1\ndata: one\n\nid: 2\ndata: tw')]));
    expect(got.map((m) => m.id)).toEqual(['1']);
  });

  it('cancels the body when the consumer stops early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('data: x\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const m of readSse(body)) {
      expect(m.data).toBe('x');
      break;
    }
    expect(cancelled).toBe(true);
  });
});
