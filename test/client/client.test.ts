/**
 * `belay/client` over real sockets against a real `createBelayApp` + `listen` server with a real worker, on every
 * store under test: creates that survive dropped responses, ETags, waiting by polling and by streaming, an SSE
 * consumer whose connection is cut at random bytes, answers, cancellation, results and error mapping.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import {
  BelayApiError,
  BelayClient,
  BelayNetworkError,
  BelayTimeoutError,
  type EffectView,
  type EventPage,
  type FetchLike,
  type ResultView,
  type TaskEventView,
  type TaskTypeView,
  type TaskView,
} from '../../src/client/index.js';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator } from '../../src/protocols/http/auth.js';
import type { eventView, taskView } from '../../src/protocols/rest/representation.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { prng } from '../helpers/prng.js';

const TENANTS = ['acme', 'other', 'drop', 'flight', 'lister'] as const;
type Tenant = (typeof TENANTS)[number];
const keyOf = (tenant: Tenant) => `key-${tenant}-0123456789abcdef`;


const headerOf = (init: RequestInit, name: string): string | undefined => (init.headers as Record<string, string> | undefined)?.[name];

/** Passes `bytes` bytes of the body through, then errors (a reset connection) or ends cleanly (a proxy closing). */
function cutAfter(body: ReadableStream<Uint8Array>, bytes: number, how: 'error' | 'close'): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let left = bytes;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const r = await reader.read();
      if (r.done) {
        controller.close();
        return;
      }
      if (r.value.byteLength < left) {
        left -= r.value.byteLength;
        controller.enqueue(r.value);
        return;
      }
      if (left > 0) controller.enqueue(r.value.subarray(0, left));
      left = 0;
      await reader.cancel();
      if (how === 'error') controller.error(new TypeError('terminated: other side closed (simulated)'));
      else controller.close();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** A fetch that cuts the first `cuts` event-stream responses at random byte offsets, and records what was sent. */
function cuttingFetch(random: () => number, cuts: number) {
  const sent: Array<{ lastEventId: string | undefined; cutAt: number | null }> = [];
  let remaining = cuts;
  const f: FetchLike = async (url, init) => {
    const res = await fetch(url, init);
    if (headerOf(init, 'accept') !== 'text/event-stream' || !res.body) return res;
    const cutAt = remaining-- > 0 ? 1 + Math.floor(random() * 900) : null;
    sent.push({ lastEventId: headerOf(init, 'last-event-id'), cutAt });
    if (cutAt === null) return res;
    return new Response(cutAfter(res.body, cutAt, random() < 0.5 ? 'error' : 'close'), { status: res.status, headers: res.headers });
  };
  return { fetch: f, sent };
}

async function allEvents(client: BelayClient, id: string): Promise<TaskEventView[]> {
  const out: TaskEventView[] = [];
  for await (const e of client.iterateEvents(id, { limit: 7 })) out.push(e);
  return out;
}

async function expectApiError(p: Promise<unknown>, code: string, status: number): Promise<BelayApiError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BelayApiError);
  const err = e as BelayApiError;
  expect({ code: err.code, status: err.status }).toEqual({ code, status });
  return err;
}

describe('belay/client is usable outside the server', () => {
  it('imports nothing but its own modules', () => {
    const dir = new URL('../../src/client/', import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(new URL(file, dir), 'utf8');
      const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)].map((m) => m[1]!);
      for (const s of specifiers) expect(s, `${file} imports ${s}`).toMatch(/^\.\/[a-z-]+\.js$/);
    }
  });

  it('declares wire types the server representations are assignable to', () => {
    expectTypeOf<ReturnType<typeof taskView>>().toExtend<TaskView>();
    expectTypeOf<ReturnType<typeof eventView>>().toExtend<Pick<TaskEventView, 'seq' | 'kind' | 'at'>>();
  });
});

for (const kind of storesUnderTest()) {
  describe(`belay/client over HTTP on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let worker: Worker;
    let server: RunningServer;
    const clients = {} as Record<Tenant, BelayClient>;
    const fast = { initialDelayMs: 20, maxDelayMs: 200 };
    const clientFor = (tenant: Tenant, extra: Partial<ConstructorParameters<typeof BelayClient>[0]> = {}) =>
      new BelayClient({ baseUrl: server.url, apiKey: keyOf(tenant), retry: fast, ...extra });

    // A store that cannot be opened (PostgreSQL unreachable) fails every test here; it never skips them.
    let setupError: Error | null = null;
    beforeAll(async () => {
      try {
        await setUp();
      } catch (e) {
        setupError = e instanceof Error ? e : new Error(String(e));
      }
    });
    beforeEach(() => {
      if (setupError) throw setupError;
    });

    async function setUp() {
      store = await stores.open();
      const registry = exampleRegistry(new InMemoryDownstream());
      const service = new TaskService({ store, registry, clock: systemClock });
      const auth = new Authenticator({ apiKeys: TENANTS.map((t) => ({ key: keyOf(t), tenant: t, principal: `${t}-admin`, role: 'admin' as const })) });
      const app = createBelayApp({ service, auth, rateLimit: null, heartbeatMs: 200 });
      server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      worker = new Worker({ store, registry, concurrency: 8, leaseMs: 5000, pollMs: 50 });
      worker.start();
      for (const t of TENANTS) clients[t] = clientFor(t);
    }

    afterAll(async () => {
      await server?.close();
      await worker?.stop(5000);
      await store?.close();
      await stores.teardown();
    });

    it('lists the task types', async () => {
      const types: TaskTypeView[] = await clients.acme.listTaskTypes();
      expect(types.map((t) => t.name)).toEqual(expect.arrayContaining(['synthetic', 'access-review', 'account-migration']));
      expect(types.find((t) => t.name === 'synthetic')?.input_schema).toMatchObject({ type: 'object' });
    });

    it('create with an automatic key: a dropped response is retried with the same key and returns the same task', async () => {
      const posts: Array<{ key: string | undefined; status: number; id?: string }> = [];
      let drops = 1;
      const dropping: FetchLike = async (url, init) => {
        const res = await fetch(url, init);
        if (init.method !== 'POST') return res;
        const entry: { key: string | undefined; status: number; id?: string } = { key: headerOf(init, 'idempotency-key'), status: res.status };
        posts.push(entry);
        if (drops-- > 0) {
          // The server did the work; the response never reaches the caller.
          entry.id = ((await res.json()) as TaskView).id;
          throw new TypeError('fetch failed: socket hang up (simulated)');
        }
        return res;
      };
      const client = clientFor('drop', { fetch: dropping });
      const created = await client.createTask({ type: 'synthetic', input: { steps: 2 } });
      expect(posts).toHaveLength(2);
      expect(posts[0]!.key).toBe(`"${created.idempotencyKey}"`);
      expect(posts[1]!.key).toBe(posts[0]!.key);
      expect(created.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
      expect(posts.map((p) => p.status)).toEqual([202, 202]);
      expect(created.task.id).toBe(posts[0]!.id);
      expect(created.replayed).toBe(true);
      expect(created.location).toBe(created.task.status_url);
      const page = await clients.drop.listTasks();
      expect(page.tasks.map((t) => t.id)).toEqual([created.task.id]);

      // A new call gets a new key: a second, deliberate task.
      const second = await clients.drop.createTask({ type: 'synthetic', input: { steps: 2 } });
      expect(second.replayed).toBe(false);
      expect(second.idempotencyKey).not.toBe(created.idempotencyKey);
      expect(second.task.id).not.toBe(created.task.id);
    });

    it('create: 409 idempotency_in_flight (honouring Retry-After) and a 503 are retried with the same key', async () => {
      const keys: Array<string | undefined> = [];
      let call = 0;
      const flaky: FetchLike = async (url, init) => {
        if (init.method !== 'POST') return fetch(url, init);
        keys.push(headerOf(init, 'idempotency-key'));
        call++;
        if (call === 1) {
          // The first request reaches the server and is "still being processed" from the client's point of view.
          await (await fetch(url, init)).arrayBuffer();
          return new Response(JSON.stringify({ type: 'tag:belay.dev,2026:problem:idempotency_in_flight', title: 'In flight', status: 409, detail: 'still processing', code: 'idempotency_in_flight', owner: 'caller', retryable: true }), {
            status: 409,
            headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
          });
        }
        if (call === 2) return new Response('<html>bad gateway</html>', { status: 503, headers: { 'content-type': 'text/html' } });
        return fetch(url, init);
      };
      const started = Date.now();
      const created = await clientFor('flight', { fetch: flaky }).createTask({ type: 'synthetic', input: { steps: 1 }, contextId: 'ctx-flight' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(keys).toHaveLength(3);
      expect(new Set(keys).size).toBe(1);
      expect(created.replayed).toBe(true);
      expect(created.task.context_id).toBe('ctx-flight');
      expect((await clients.flight.listTasks()).tasks).toHaveLength(1);
    });

    it('create with an explicit key twice: one task, the second a replay; a different body is a 422 that is not retried', async () => {
      const a = await clients.acme.createTask({ type: 'synthetic', input: { steps: 1 }, idempotencyKey: 'q3 "review"\\1' });
      const b = await clients.acme.createTask({ type: 'synthetic', input: { steps: 1 }, idempotencyKey: 'q3 "review"\\1' });
      expect(b.task.id).toBe(a.task.id);
      expect([a.replayed, b.replayed]).toEqual([false, true]);
      let calls = 0;
      const counting: FetchLike = (url, init) => {
        calls++;
        return fetch(url, init);
      };
      const err = await expectApiError(clientFor('acme', { fetch: counting }).createTask({ type: 'synthetic', input: { steps: 2 }, idempotencyKey: 'q3 "review"\\1' }), 'idempotency_mismatch', 422);
      expect(calls).toBe(1);
      expect(err.retryable).toBe(false);
    });

    it('getTask returns the ETag and poll hint, and a 304 while nothing changed', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 1, askAtStep: 0 } });
      const waiting = await clients.acme.waitForTask(task.id, { until: 'input_required', maxPollIntervalMs: 50, timeoutMs: 10_000 });
      expect(waiting.status).toBe('input_required');
      const snap = await clients.acme.getTask(task.id);
      expect(snap.etag).toBe(`"v${snap.task.version}"`);
      expect(snap.pollIntervalMs).toBe(30_000);
      const again = await clients.acme.getTask(task.id, { etag: snap.etag ?? undefined });
      expect(again).toEqual({ notModified: true, task: null, etag: snap.etag, pollIntervalMs: 30_000 });

      // Waiting past input_required polls with If-None-Match: every poll after the first costs a 304 without a body.
      const statuses: number[] = [];
      const recording: FetchLike = async (url, init) => {
        const res = await fetch(url, init);
        if (init.method === 'GET') statuses.push(res.status);
        return res;
      };
      const err = await clientFor('acme', { fetch: recording })
        .waitForTask(task.id, { maxPollIntervalMs: 40, timeoutMs: 1500 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BelayTimeoutError);
      expect((err as BelayTimeoutError).lastTask?.status).toBe('input_required');
      // How many polls fit in the window depends on the machine's load; two are enough to see the 304.
      expect(statuses.length).toBeGreaterThanOrEqual(2);
      expect(statuses[0]).toBe(200);
      expect(statuses.slice(1).every((s) => s === 304)).toBe(true);
      await clients.acme.cancel(task.id);
    });

    it('waitForTask by polling resolves with the terminal representation', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 4, stepMs: 30 } });
      const seen: string[] = [];
      const done = await clients.acme.waitForTask(task.id, { mode: 'poll', maxPollIntervalMs: 50, timeoutMs: 20_000, onUpdate: (t) => seen.push(t.status) });
      expect(done.status).toBe('completed');
      expect(done.progress).toMatchObject({ current: 4, total: 4 });
      expect(done.poll_interval_ms).toBeNull();
      expect(seen.at(-1)).toBe('completed');
      expect((await clients.acme.getResult(task.id)).result).toEqual({ steps_done: 4 });
    });

    it('waitForTask by following the stream resolves with the terminal representation', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 5, stepMs: 30 } });
      const done = await clients.acme.waitForTask(task.id, { mode: 'stream', timeoutMs: 20_000 });
      expect(done.status).toBe('completed');
      expect(done).toEqual((await clients.acme.getTask(task.id)).task);
      // On a task that has already finished it resolves at once.
      expect((await clients.acme.waitForTask(task.id, { mode: 'stream', timeoutMs: 2000 })).id).toBe(task.id);
    });

    it('answer, stale and invalid answers, result, effects', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 3, askAtStep: 1, effectsPerStep: 2 } });
      await expectApiError(clients.acme.getResult(task.id), 'result_not_ready', 409);
      const waiting = await clients.acme.waitForTask(task.id, { mode: 'stream', until: 'input_required', timeoutMs: 20_000 });
      expect(waiting.status).toBe('input_required');
      const question = waiting.input_request!;
      expect(question).toMatchObject({ key: 'step-1', schema: { required: ['ok'] } });

      const stale = await expectApiError(clients.acme.answer(task.id, { version: question.version - 1, answer: { ok: true } }), 'stale_version', 409);
      expect(stale.owner).toBe('caller');
      const invalid = await expectApiError(clients.acme.answer(task.id, { version: question.version, answer: { ok: 'yes' } }), 'validation', 422);
      expect(invalid.problem.issues).toBeInstanceOf(Array);

      const answered = await clients.acme.answer(task.id, { version: question.version, answer: { ok: true } });
      expect(answered.version).toBeGreaterThan(question.version);
      // A duplicate of the answer is refused (the task has moved on, or is no longer waiting), never applied twice.
      const duplicate = await clients.acme.answer(task.id, { version: question.version, answer: { ok: true } }).catch((e: unknown) => e);
      expect(duplicate).toBeInstanceOf(BelayApiError);
      expect((duplicate as BelayApiError).status).toBe(409);
      expect(['stale_version', 'not_waiting_for_input']).toContain((duplicate as BelayApiError).code);

      const done = await clients.acme.waitForTask(task.id, { mode: 'poll', maxPollIntervalMs: 50, timeoutMs: 20_000 });
      expect(done.status).toBe('completed');
      const result: ResultView = await clients.acme.getResult(task.id);
      expect(result).toMatchObject({ id: task.id, status: 'completed', result: { steps_done: 3 }, error: null });
      const effects: EffectView[] = await clients.acme.listEffects(task.id);
      expect(effects.map((e) => e.key).sort()).toEqual(['s0-e0', 's0-e1', 's1-e0', 's1-e1', 's2-e0', 's2-e1']);
      expect(effects.every((e) => e.status === 'applied')).toBe(true);
    });

    it('cancel: requested while running, then cancelled; idempotent afterwards; the result says so', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 500, stepMs: 20 } });
      for await (const e of clients.acme.streamEvents(task.id)) if (e.kind === 'progress') break;
      const first = await clients.acme.cancel(task.id, { reason: 'changed my mind' });
      expect(['requested', 'canceled']).toContain(first.cancellation);
      const done = await clients.acme.waitForTask(task.id, { mode: 'stream', timeoutMs: 20_000 });
      expect(done.status).toBe('cancelled');
      const again = await clients.acme.cancel(task.id);
      expect(again.cancellation).toBe('already_terminal');
      const result = await clients.acme.getResult(task.id);
      expect(result.status).toBe('cancelled');
      expect(result.result).toBeNull();
      expect(result.error?.code).toBeTruthy();
    });

    it('lists tasks with filters and iterates over every page', async () => {
      const before = new Date(Date.now() - 1000);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await clients.lister.createTask({ type: 'synthetic', input: { steps: 1 } })).task.id);
      const review = (await clients.lister.createTask({ type: 'access-review', input: { systems: 1, revocations: 1 } })).task.id;
      await clients.lister.waitForTask(review, { until: 'input_required', maxPollIntervalMs: 50, timeoutMs: 20_000 });

      const iterated: string[] = [];
      for await (const t of clients.lister.iterateTasks({ type: 'synthetic', limit: 2 })) iterated.push(t.id);
      expect(iterated.sort()).toEqual([...ids].sort());
      const firstPage = await clients.lister.listTasks({ type: 'synthetic', limit: 2 });
      expect(firstPage.tasks).toHaveLength(2);
      expect(firstPage.next_cursor).toEqual(expect.any(String));

      expect((await clients.lister.listTasks({ status: 'input_required' })).tasks.map((t) => t.id)).toEqual([review]);
      expect((await clients.lister.listTasks({ status: ['input_required', 'cancelled'], type: 'access-review' })).tasks).toHaveLength(1);
      expect((await clients.lister.listTasks({ createdAfter: before, limit: 100 })).tasks).toHaveLength(6);
      expect((await clients.lister.listTasks({ createdBefore: before })).tasks).toHaveLength(0);
      await expectApiError(clients.lister.listTasks({ status: 'sleeping' as never }), 'validation', 422);
      await clients.lister.cancel(review);
    });

    it('maps errors: another tenant\'s task is not_found everywhere, bad credentials, non-JSON errors, network failures', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 1 } });
      const other = clients.other;
      const notFound = await expectApiError(other.getTask(task.id), 'not_found', 404);
      expect(notFound).toMatchObject({ owner: 'caller', retryable: false, type: 'tag:belay.dev,2026:problem:not_found', title: 'Task not found' });
      expect(notFound.detail).toEqual(expect.any(String));
      expect(notFound.instance).toBe(`/v1/agent-tasks/${task.id}`);
      await expectApiError(other.answer(task.id, { version: 1, answer: {} }), 'not_found', 404);
      await expectApiError(other.cancel(task.id), 'not_found', 404);
      await expectApiError(other.getResult(task.id), 'not_found', 404);
      await expectApiError(other.listEffects(task.id), 'not_found', 404);
      await expectApiError(other.listEvents(task.id), 'not_found', 404);
      await expectApiError(other.waitForTask(task.id, { mode: 'stream' }), 'not_found', 404);
      await expectApiError(
        (async () => {
          for await (const _ of other.streamEvents(task.id)) throw new Error('no event may arrive');
        })(),
        'not_found',
        404,
      );
      expect((await clients.acme.getTask(task.id)).task.id).toBe(task.id);

      await expectApiError(new BelayClient({ baseUrl: server.url, apiKey: 'not-a-key-0123456789' }).listTasks(), 'unauthorized', 401);
      await expectApiError(clients.acme.createTask({ type: 'no-such-type' }), 'unknown_task_type', 422);

      let calls = 0;
      const gateway: FetchLike = async () => {
        calls++;
        return new Response('<html>502 Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway', headers: { 'content-type': 'text/html' } });
      };
      const viaProxy = clientFor('acme', { fetch: gateway, retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 } });
      const proxied = await expectApiError(viaProxy.getTask(task.id), 'http_502', 502);
      expect(proxied).toMatchObject({ retryable: true, owner: 'operator', title: 'Bad Gateway' });
      expect(calls).toBe(3);

      // Nothing listens on a closed port: bounded retries, then a BelayNetworkError with the cause.
      const closed = await listen(() => new Response(null), { port: 0, host: '127.0.0.1' });
      await closed.close();
      const err = await new BelayClient({ baseUrl: closed.url, apiKey: keyOf('acme'), retry: { maxAttempts: 2, initialDelayMs: 1 } })
        .listTasks()
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BelayNetworkError);
      expect((err as BelayNetworkError).attempts).toBe(2);

      // An abort through the caller's signal is rethrown as is, never retried.
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(clients.acme.getTask(task.id, { signal: controller.signal })).rejects.toBe(reason);
    });

    it('streamEvents from `after`, and stopping early closes the stream', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 3 } });
      await clients.acme.waitForTask(task.id, { mode: 'stream', timeoutMs: 20_000 });
      const log = await allEvents(clients.acme, task.id);
      const fromThree: number[] = [];
      for await (const e of clients.acme.streamEvents(task.id, { after: 3 })) fromThree.push(e.seq);
      expect(fromThree).toEqual(log.filter((e) => e.seq > 3).map((e) => e.seq));
      let n = 0;
      for await (const _ of clients.acme.streamEvents(task.id)) if (++n === 2) break;
      expect(n).toBe(2);
      // After the terminal event there is nothing left: the iterator ends at once.
      const past: TaskEventView[] = [];
      for await (const e of clients.acme.streamEvents(task.id, { after: log.at(-1)!.seq })) past.push(e);
      expect(past).toEqual([]);
    });

    for (const round of [1, 2, 3]) {
      it(`SSE consumer cut at random bytes sees every event exactly once, in order, live (round ${round})`, async () => {
        const seed = (Date.now() ^ (round * 7919)) >>> 0;
        const random = prng(seed);
        const cuts = 4 + Math.floor(random() * 4);
        const cutter = cuttingFetch(random, cuts);
        const client = clientFor('acme', { fetch: cutter.fetch });
        const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 25, stepMs: 15 } });
        const got: TaskEventView[] = [];
        const reconnects: number[] = [];
        for await (const e of client.streamEvents(task.id, { reconnectDelayMs: 10, onReconnect: (r) => reconnects.push(r.lastEventId) })) got.push(e);
        const log = await allEvents(clients.acme, task.id);
        const context = `seed ${seed}, cuts ${JSON.stringify(cutter.sent)}`;
        expect(got, context).toEqual(log);
        expect(got.map((e) => e.seq), context).toEqual(log.map((_, i) => i + 1));
        expect(got.at(-1)!.kind, context).toBe('completed');
        expect(cutter.sent.filter((s) => s.cutAt !== null).length, context).toBe(Math.min(cuts, cutter.sent.length));
        // Every reconnect asked for exactly what came after the last event delivered.
        expect(cutter.sent.slice(1).map((s) => Number(s.lastEventId ?? 0)), context).toEqual(reconnects);
      });
    }

    it('SSE consumer cut at random bytes replays a finished task\'s log exactly once, in order', async () => {
      const { task } = await clients.acme.createTask({ type: 'synthetic', input: { steps: 12 } });
      await clients.acme.waitForTask(task.id, { maxPollIntervalMs: 50, timeoutMs: 20_000 });
      const log = await allEvents(clients.acme, task.id);
      const page: EventPage = await clients.acme.listEvents(task.id, { after: 2, limit: 3 });
      expect(page).toEqual({ events: log.slice(2, 5), next_after: 5, has_more: true });
      for (let round = 0; round < 4; round++) {
        const seed = (Date.now() + round) >>> 0;
        const cutter = cuttingFetch(prng(seed), 10);
        const got: TaskEventView[] = [];
        for await (const e of clientFor('acme', { fetch: cutter.fetch }).streamEvents(task.id, { reconnectDelayMs: 5 })) got.push(e);
        expect(got, `seed ${seed}, cuts ${JSON.stringify(cutter.sent)}`).toEqual(log);
      }
    });
  });
}
