import { BelayError } from '../../core/errors.js';
import { checkJsonShape, type JsonLimits } from '../../core/limits.js';

/** JSON travels as UTF-8 (RFC 8259 §8.1): invalid bytes are refused, never replaced by U+FFFD and stored. A BOM is
 * kept, so JSON.parse refuses it as before. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Reads a JSON request body within the byte limit (counted while streaming, not trusted from Content-Length),
 * requires a JSON media type, and checks depth and sizes before anything else looks at it.
 * @throws BelayError UNSUPPORTED_MEDIA_TYPE | PAYLOAD_TOO_LARGE | INVALID_JSON | PAYLOAD_TOO_DEEP
 */
export async function readJsonBody(req: Request, limits: JsonLimits, mediaTypes: readonly string[] = ['application/json']): Promise<unknown> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!mediaTypes.includes(type)) throw new BelayError('UNSUPPORTED_MEDIA_TYPE', `Send ${mediaTypes.join(' or ')}`);
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limits.maxBytes) throw new BelayError('PAYLOAD_TOO_LARGE', `The body is larger than ${limits.maxBytes} bytes`);
  if (req.headers.get('content-encoding') && req.headers.get('content-encoding') !== 'identity') {
    throw new BelayError('UNSUPPORTED_MEDIA_TYPE', 'Compressed request bodies are not accepted');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (req.body) {
    const reader = req.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limits.maxBytes) {
        await reader.cancel();
        throw new BelayError('PAYLOAD_TOO_LARGE', `The body is larger than ${limits.maxBytes} bytes`);
      }
      chunks.push(value);
    }
  }
  let text: string;
  try {
    text = UTF8.decode(Buffer.concat(chunks));
  } catch {
    throw new BelayError('INVALID_JSON', 'The body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BelayError('INVALID_JSON', 'The body is not valid JSON');
  }
  checkJsonShape(value, 'body', limits);
  return value;
}
