/**
 * Request bodies are UTF-8 JSON (found by the chaos scorecard, S16: invalid bytes used to be replaced by U+FFFD and
 * the altered text stored as the caller's input).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_JSON_LIMITS } from '../../src/core/limits.js';
import { readJsonBody } from '../../src/protocols/http/body.js';

const request = (bytes: Uint8Array) => new Request('http://x/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes });
const enc = new TextEncoder();

describe('readJsonBody', () => {
  it('refuses invalid UTF-8 instead of replacing it', async () => {
    const bytes = Uint8Array.from([...enc.encode('{"note":"'), 0xff, 0xfe, 0xc3, ...enc.encode('"}')]);
    await expect(readJsonBody(request(bytes), DEFAULT_JSON_LIMITS)).rejects.toMatchObject({ code: 'INVALID_JSON' });
  });

  it('keeps valid multi-byte text exactly', async () => {
    await expect(readJsonBody(request(enc.encode('{"note":"café 🧗 Привет"}')), DEFAULT_JSON_LIMITS)).resolves.toEqual({ note: 'café 🧗 Привет' });
  });

  it('still refuses a byte-order mark', async () => {
    await expect(readJsonBody(request(enc.encode('\ufeff{}')), DEFAULT_JSON_LIMITS)).rejects.toMatchObject({ code: 'INVALID_JSON' });
  });
});
