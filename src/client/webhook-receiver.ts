/**
 * @module client/webhook-receiver
 * Receiving Belay webhooks (Standard Webhooks 1.0) so that each event is acted on exactly once although Belay
 * delivers at least once: verify the signature (HMAC-SHA256 over `id.timestamp.body`, compared in constant time,
 * any of the space-separated `v1,` signatures may match — two are sent while a secret rotates), refuse timestamps
 * more than 5 minutes old or ahead, then dedupe on `webhook-id`, which is the same on every retry and redelivery.
 *
 * Web-standard only (WebCrypto, Request/Response): Node ≥ 20, Deno, Bun, workers, browsers.
 *
 * @example
 * const receiver = new WebhookReceiver({ secret: process.env.BELAY_WEBHOOK_SECRET! });
 * // Hono, or anything with web-standard Request/Response:
 * app.post('/belay-hooks', (c) => receiver.handle(c.req.raw, async (event) => {
 *   const task = await belay.getTask(event.data.task_id);   // the callback is a notice: read the task
 *   await act(task);
 * }));
 */

export interface WebhookEvent {
  /** The event id (`webhook-id`): stable across retries. */
  id: string;
  /** `task.completed`, `task.input_required`, ... */
  type: string;
  timestamp: string;
  data: {
    task_id: string;
    task_type: string;
    context_id: string;
    seq: number;
    state: string | null;
    status: string | null;
    task_url: string;
    events_url: string;
    error?: { code: string | null; message: string | null };
    input_request?: { key: string | null; question: string | null };
    [key: string]: unknown;
  };
}

export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: 'missing_headers' | 'bad_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'bad_signature' | 'bad_body',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Where seen event ids live. `begin` must be atomic: exactly one concurrent caller for an id gets `new`.
 * Use a shared store (a database table with a unique key, Redis SET NX) when several receiver processes run.
 */
export interface DedupeStore {
  /** `new`: act now (then call `complete` or `abort`); `in_flight`: another delivery of it is being acted on; `done`: already acted on. */
  begin(id: string): Promise<'new' | 'in_flight' | 'done'>;
  complete(id: string): Promise<void>;
  /** The action failed: let a redelivery try again. */
  abort(id: string): Promise<void>;
}

/** In-process dedupe, remembering ids for `ttlMs` (default 72 h: longer than Belay's ~75.5 h retry schedule's useful tail). */
export class InMemoryDedupeStore implements DedupeStore {
  private readonly states = new Map<string, { state: 'in_flight' | 'done'; at: number }>();
  constructor(
    private readonly ttlMs = 80 * 3600_000,
    private readonly now: () => number = () => Date.now(),
    private readonly maxEntries = 100_000,
  ) {}

  async begin(id: string): Promise<'new' | 'in_flight' | 'done'> {
    const t = this.now();
    const cur = this.states.get(id);
    if (cur && t - cur.at < this.ttlMs) return cur.state;
    if (this.states.size >= this.maxEntries) this.evict(t);
    this.states.set(id, { state: 'in_flight', at: t });
    return 'new';
  }

  async complete(id: string): Promise<void> {
    this.states.set(id, { state: 'done', at: this.now() });
  }

  async abort(id: string): Promise<void> {
    this.states.delete(id);
  }

  private evict(t: number): void {
    for (const [id, s] of this.states) if (t - s.at >= this.ttlMs) this.states.delete(id);
    // Still full: drop the oldest tenth (Map keeps insertion order).
    if (this.states.size >= this.maxEntries) {
      let n = Math.ceil(this.maxEntries / 10);
      for (const id of this.states.keys()) {
        if (n-- <= 0) break;
        this.states.delete(id);
      }
    }
  }
}

export interface WebhookReceiverOptions {
  /** The endpoint's (or the tenant's callback) secret, `whsec_...`; several while you roll one over. */
  secret: string | readonly string[];
  /** Allowed clock difference either way. Default 300 s. */
  toleranceSeconds?: number;
  dedupe?: DedupeStore;
  now?: () => number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(h: HeaderSource, name: string): string | null {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name);
  const rec = h as Record<string, string | string[] | undefined>;
  const v = rec[name] ?? rec[name.toLowerCase()] ?? Object.entries(rec).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null);
}

function base64ToBytes(b64: string): Uint8Array | null {
  try {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

/** Equal-length byte arrays compared without an early exit. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

export class WebhookReceiver {
  private readonly keys: Promise<Array<Awaited<ReturnType<typeof crypto.subtle.importKey>>>>;
  private readonly tolerance: number;
  readonly dedupe: DedupeStore;
  private readonly now: () => number;

  constructor(options: WebhookReceiverOptions) {
    const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
    if (secrets.length === 0) throw new Error('WebhookReceiver needs at least one secret');
    this.keys = Promise.all(
      secrets.map((s) => {
        const raw = base64ToBytes(s.startsWith('whsec_') ? s.slice(6) : s);
        if (!raw || raw.length === 0) throw new Error('A webhook secret is whsec_ followed by base64');
        return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      }),
    );
    this.keys.catch(() => undefined);
    this.tolerance = options.toleranceSeconds ?? 300;
    this.now = options.now ?? (() => Date.now());
    this.dedupe = options.dedupe ?? new InMemoryDedupeStore(undefined, this.now);
  }

  /**
   * Verifies a delivery and parses its body. Pass the body exactly as received (the raw text, not re-serialised JSON).
   * @throws WebhookVerificationError
   */
  async verify(headers: HeaderSource, rawBody: string): Promise<WebhookEvent> {
    const id = header(headers, 'webhook-id');
    const ts = header(headers, 'webhook-timestamp');
    const sigs = header(headers, 'webhook-signature');
    if (!id || !ts || !sigs) throw new WebhookVerificationError('missing_headers', 'webhook-id, webhook-timestamp and webhook-signature are required');
    if (!/^\d{1,12}$/.test(ts)) throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp is not an integer');
    const age = Math.floor(this.now() / 1000) - Number(ts);
    if (age > this.tolerance) throw new WebhookVerificationError('timestamp_too_old', 'The delivery is older than the tolerance (replay?)');
    if (age < -this.tolerance) throw new WebhookVerificationError('timestamp_too_new', 'The delivery is timestamped in the future');
    const signed = new TextEncoder().encode(`${id}.${ts}.${rawBody}`);
    const expected = await Promise.all((await this.keys).map(async (k) => new Uint8Array(await crypto.subtle.sign('HMAC', k, signed))));
    let ok = false;
    for (const part of sigs.split(' ')) {
      const comma = part.indexOf(',');
      if (comma < 0 || part.slice(0, comma) !== 'v1') continue;
      const given = base64ToBytes(part.slice(comma + 1));
      if (!given) continue;
      // Check every candidate (no early exit on a match) so timing says nothing about which one matched.
      for (const e of expected) ok = constantTimeEqual(e, given) || ok;
    }
    if (!ok) throw new WebhookVerificationError('bad_signature', 'No signature matches');
    let event: WebhookEvent;
    try {
      event = JSON.parse(rawBody) as WebhookEvent;
    } catch {
      throw new WebhookVerificationError('bad_body', 'The body is not JSON');
    }
    if (event.id !== id) throw new WebhookVerificationError('bad_body', 'The body names another event id than webhook-id');
    return event;
  }

  /**
   * Verifies, dedupes and runs `onEvent` at most once per event id (exactly once, given Belay redelivers until a 2xx):
   * 204 after acting, 200 for a duplicate already acted on, 409 while another delivery of the same event is being
   * acted on (Belay retries later), 401 for a bad signature or timestamp, 500 when `onEvent` throws (the id is
   * released so the redelivery acts).
   */
  async handle(request: Request, onEvent: (event: WebhookEvent) => Promise<void> | void): Promise<Response> {
    const body = await request.text();
    let event: WebhookEvent;
    try {
      event = await this.verify(request.headers, body);
    } catch (e) {
      if (e instanceof WebhookVerificationError) return Response.json({ error: e.reason, message: e.message }, { status: e.reason === 'bad_body' ? 400 : 401 });
      throw e;
    }
    const seen = await this.dedupe.begin(event.id);
    if (seen === 'done') return Response.json({ duplicate: true }, { status: 200 });
    if (seen === 'in_flight') return Response.json({ in_flight: true }, { status: 409, headers: { 'retry-after': '5' } });
    try {
      await onEvent(event);
    } catch (e) {
      await this.dedupe.abort(event.id);
      return Response.json({ error: 'handler_failed', message: e instanceof Error ? e.message : String(e) }, { status: 500 });
    }
    await this.dedupe.complete(event.id);
    return new Response(null, { status: 204 });
  }
}
