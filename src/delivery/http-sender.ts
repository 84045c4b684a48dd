/**
 * @module delivery/http-sender
 * One webhook attempt over node:http(s): a fresh connection whose address comes from the SSRF guard's lookup (IP
 * literals are checked before connecting), no redirects (3xx is a failure), one timeout for the whole exchange, and
 * at most 64 KiB of the response read (it is only logged).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { coerceError } from '../core/errors.js';
import { isSsrfRefusal, type UrlGuard } from './ssrf-guard.js';

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export type SendResult =
  /** The receiver answered (any status). */
  | { kind: 'response'; status: number; headers: Record<string, string | string[] | undefined>; body: string }
  /** The guard refused the address: nothing was sent. */
  | { kind: 'refused'; error: string }
  | { kind: 'timeout'; error: string }
  /** Connection refused, reset, TLS failure, DNS failure... */
  | { kind: 'network'; error: string };

export type Sender = (req: SendRequest) => Promise<SendResult>;

const MAX_RESPONSE_BYTES = 64 * 1024;

/** The sender the dispatcher uses: every connect goes through `guard`. */
export function guardedSender(guard: UrlGuard): Sender {
  const lookup = guard.lookup();
  return async (req) => {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return { kind: 'refused', error: 'invalid URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'refused', error: `scheme ${url.protocol} not allowed` };
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    // net.connect skips `lookup` for IP literals, so those are checked here, before any socket exists.
    if (isIP(host) !== 0) {
      try {
        await guard.resolveChecked(host);
      } catch (e) {
        return { kind: 'refused', error: coerceError(e).message };
      }
    }
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const done = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req_ = request(
        url,
        {
          method: 'POST',
          headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
          lookup: lookup as never,
          agent: false,
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            if (size < MAX_RESPONSE_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('end', () => done({ kind: 'response', status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8').slice(0, MAX_RESPONSE_BYTES) }));
          res.on('error', (e) => done({ kind: 'network', error: e.message }));
        },
      );
      const timer = setTimeout(() => {
        done({ kind: 'timeout', error: `no response within ${req.timeoutMs} ms` });
        req_.destroy();
      }, req.timeoutMs);
      req_.on('error', (e) => done(isSsrfRefusal(e) ? { kind: 'refused', error: e.message } : { kind: 'network', error: e.message }));
      req_.end(req.body);
    });
  };
}
