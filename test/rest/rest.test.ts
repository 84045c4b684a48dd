/**
 * The REST async task contract over real sockets, on both stores: the second article's verification checks, each
 * its own test, plus bad input and the cross-tenant matrix. Processes are real where the check says "kill" or
 * "restart every process".
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, startDownstreamServer, type DownstreamServer, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { eventually } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { spawnServer } from '../helpers/server-process.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { spawnWorker } from '../helpers/worker-process.js';

const ALICE = 'key-alice-0123456789abcdef';
const BOB = 'key-bob-0123456789abcdefgh';
const MALLORY = 'key-mallory-0123456789abcdef';
const ADMIN = 'key-admin-0123456789abcdefg';
const KEYS = [`${ALICE}=acme:alice`, `${BOB}=acme:bob`, `${MALLORY}=globex:mallory`, `${ADMIN}=acme:ops:admin`];

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

type Api = (method: string, path: string, init?: { body?: unknown; headers?: Record<string, string>; raw?: string }) => Promise<Reply>;

function client(base: string, key: string): Api {
  return async (method, path, init = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...init.headers };
    let body: string | undefined = init.raw;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}

/** Reads an SSE stream until it ends or `stopAfter` events arrived (then drops the connection). */
async function readSse(url: string, key: string, lastEventId: number | null, stopAfter: number): Promise<{ ids: number[]; kinds: string[]; ended: boolean }> {
  const ctrl = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...(lastEventId !== null ? { 'last-event-id': String(lastEventId) } : {}) },
    signal: ctrl.signal,
  });
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const ids: number[] = [];
  const kinds: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { ids, kinds, ended: true };
    buf += decoder.decode(value, { stream: true });
    let idx;
    while ((idx = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, idx);
      buf = buf.slice(idx + 2);
      const id = /^id: (\d+)$/m.exec(frame);
      const ev = /^event: (\S+)$/m.exec(frame);
      if (id && ev) {
        ids.push(Number(id[1]));
        kinds.push(ev[1]!);
        if (ids.length >= stopAfter) {
          ctrl.abort();
          return { ids, kinds, ended: false };
        }
      }
    }
  }
}

for (const kind of storesUnderTest()) {
  describe(`REST contract on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store | null = null;
    let server: RunningServer | null = null;
    let worker: Worker | null = null;
    let downstream: InMemoryDownstream;
    let alice: Api;
    let bob: Api;
    let mallory: Api;
    let admin: Api;

    async function startInProcess(options: { rateLimit?: { perSecond: number; burst: number } | null } = {}) {
      store = await stores.open();
      downstream = new InMemoryDownstream();
      const registry = exampleRegistry(downstream);
      const service = new TaskService({ store, registry, clock: systemClock });
      const app = createBelayApp({ service, auth: new Authenticator({ apiKeys: KEYS.map(parseApiKeySpec) }), rateLimit: options.rateLimit ?? null, heartbeatMs: 200 });
      server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      worker = new Worker({ store, registry, concurrency: 4, leaseMs: 2000, pollMs: 50 });
      worker.start();
      alice = client(server.url, ALICE);
      bob = client(server.url, BOB);
      mallory = client(server.url, MALLORY);
      admin = client(server.url, ADMIN);
    }

    async function waitFor(api: Api, id: string, statuses: string[], timeoutMs = 20_000): Promise<any> {
      return eventually(
        async () => {
          const r = await api('GET', `/v1/agent-tasks/${id}`);
          return statuses.includes(r.body.status) ? r.body : null;
        },
        timeoutMs,
        25,
      );
    }

    afterEach(async () => {
      await server?.close();
      await worker?.stop(5000);
      await store?.close();
      server = null;
      worker = null;
      store = null;
    });
    afterAll(() => stores.teardown());

    describe('in-process gateway and worker', () => {
      beforeEach(() => startInProcess());

      it('1. the same create sent twice makes one task and one dispatch', async () => {
        const req = { body: { type: 'synthetic', input: { steps: 2 } }, headers: { 'idempotency-key': '"import-2026-07-27-acme"' } };
        const first = await alice('POST', '/v1/agent-tasks', req);
        const second = await alice('POST', '/v1/agent-tasks', req);
        expect(first.status).toBe(202);
        expect(first.headers.get('location')).toBe(`/v1/agent-tasks/${first.body.id}`);
        expect(first.body).toMatchObject({
          status: 'queued',
          version: 1,
          status_url: `/v1/agent-tasks/${first.body.id}`,
          cancel_url: `/v1/agent-tasks/${first.body.id}/cancellation`,
          events_url: `/v1/agent-tasks/${first.body.id}/events`,
        });
        expect(second.status).toBe(202);
        expect(second.body.id).toBe(first.body.id);
        expect(second.headers.get('idempotency-replayed')).toBe('true');
        await waitFor(alice, first.body.id, ['completed']);
        expect((await alice('GET', '/v1/agent-tasks')).body.tasks).toHaveLength(1);
        const events = (await alice('GET', `/v1/agent-tasks/${first.body.id}/events`)).body.events;
        expect(events.filter((e: { kind: string }) => e.kind === 'started')).toHaveLength(1);
        // Same key, different body: refused, nothing created.
        const other = await alice('POST', '/v1/agent-tasks', { ...req, body: { type: 'synthetic', input: { steps: 3 } } });
        expect(other.status).toBe(422);
        expect(other.body.code).toBe('idempotency_mismatch');
        expect((await alice('GET', '/v1/agent-tasks')).body.tasks).toHaveLength(1);
      });

      it('2. a dropped create response is recovered by retrying with the same key', async () => {
        const ctrl = new AbortController();
        const body = JSON.stringify({ type: 'synthetic', input: { steps: 1 } });
        await fetch(`${server!.url}/v1/agent-tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json', 'idempotency-key': 'drop-me' },
          body,
          signal: ctrl.signal,
        })
          .then(() => ctrl.abort())
          .catch(() => undefined);
        const retry = await alice('POST', '/v1/agent-tasks', { body: JSON.parse(body), headers: { 'idempotency-key': 'drop-me' } });
        expect(retry.status).toBe(202);
        expect(retry.headers.get('idempotency-replayed')).toBe('true');
        const again = await alice('POST', '/v1/agent-tasks', { body: JSON.parse(body), headers: { 'idempotency-key': 'drop-me' } });
        expect(again.body.id).toBe(retry.body.id);
        expect((await alice('GET', '/v1/agent-tasks')).body.tasks.map((t: { id: string }) => t.id)).toEqual([retry.body.id]);
      });

      it('5. an answer with an old version is rejected and changes nothing', async () => {
        const created = await alice('POST', '/v1/agent-tasks', { body: { type: 'access-review', input: { systems: 2, revocations: 1 } }, headers: { 'idempotency-key': 'k5' } });
        const paused = await waitFor(alice, created.body.id, ['input_required']);
        expect(paused.input_request).toMatchObject({ key: 'approval', version: paused.version });
        const stale = await alice('POST', `/v1/agent-tasks/${created.body.id}/input`, { body: { answer: { approved: true }, version: paused.version - 1 } });
        expect(stale.status).toBe(409);
        expect(stale.body).toMatchObject({ code: 'stale_version', current_version: paused.version });
        const invalid = await alice('POST', `/v1/agent-tasks/${created.body.id}/input`, { body: { answer: { approved: 'maybe' }, version: paused.version } });
        expect(invalid.status).toBe(422);
        const after = await alice('GET', `/v1/agent-tasks/${created.body.id}`);
        expect(after.body).toMatchObject({ status: 'input_required', version: paused.version });
        const ok = await alice('POST', `/v1/agent-tasks/${created.body.id}/input`, { body: { answer: { approved: true }, version: paused.version } });
        expect(ok.status).toBe(202);
        await waitFor(alice, created.body.id, ['completed']);
        const late = await alice('POST', `/v1/agent-tasks/${created.body.id}/input`, { body: { answer: { approved: true }, version: paused.version } });
        expect(late.status).toBe(409);
      });

      it('6a. cancel before work starts', async () => {
        await worker!.stop();
        const created = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} }, headers: { 'idempotency-key': 'k6a' } });
        const cancel = await alice('POST', `/v1/agent-tasks/${created.body.id}/cancellation`);
        expect(cancel.status).toBe(200);
        expect(cancel.body).toMatchObject({ status: 'cancelled', cancellation: 'canceled' });
        const again = await alice('POST', `/v1/agent-tasks/${created.body.id}/cancellation`, { body: { reason: 'twice' } });
        expect(again.body).toMatchObject({ status: 'cancelled', cancellation: 'already_terminal' });
        const result = await alice('GET', `/v1/agent-tasks/${created.body.id}/result`);
        expect(result.body).toMatchObject({ status: 'cancelled', result: null, error: { code: 'CANCELLED' } });
      });

      it('6b. cancel in the middle of a batch reports what was applied and stops writing', async () => {
        const created = await alice('POST', '/v1/agent-tasks', {
          body: { type: 'account-migration', input: { records: 2000, batchSize: 100, ambiguousEvery: 0, batchDelayMs: 50 } },
          headers: { 'idempotency-key': 'k6b' },
        });
        await eventually(async () => ((await alice('GET', `/v1/agent-tasks/${created.body.id}`)).body.progress.current ?? 0) >= 300, 20_000, 10);
        const cancel = await alice('POST', `/v1/agent-tasks/${created.body.id}/cancellation`, { body: { reason: 'wrong import file' } });
        expect(cancel.status).toBe(202);
        expect(cancel.body.cancellation).toBe('requested');
        const done = await waitFor(alice, created.body.id, ['cancelled']);
        const applied = done.error.details.effects_applied as string[];
        expect(applied.length).toBeGreaterThanOrEqual(300);
        expect(applied.length).toBeLessThan(2000);
        expect(downstream.countByKind('migrate')).toBe(applied.length);
        const effects = await alice('GET', `/v1/agent-tasks/${created.body.id}/effects`);
        const ledger = effects.body.effects as Array<{ key: string; status: string }>;
        expect(ledger.filter((e) => e.key.startsWith('migrate:') && e.status === 'applied')).toHaveLength(applied.length);
        // The migration declares a compensation: every applied record was moved back, once.
        expect(ledger.filter((e) => e.key.startsWith('compensate:migrate:') && e.status === 'applied')).toHaveLength(applied.length);
        expect(done.error.details.compensations).toHaveLength(applied.length);
        await new Promise((r) => setTimeout(r, 300));
        expect(downstream.countByKind('migrate')).toBe(applied.length);
      });

      it('6c. cancellation racing the final commit: whichever commits first wins', async () => {
        // The only unit ends with the final commit: cancelling during it aborts the step before that commit.
        const slow = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 1, stepMs: 3000 } }, headers: { 'idempotency-key': 'k6c-1' } });
        await waitFor(alice, slow.body.id, ['working']);
        const cancel = await alice('POST', `/v1/agent-tasks/${slow.body.id}/cancellation`);
        expect(cancel.body.cancellation).toBe('requested');
        expect((await waitFor(alice, slow.body.id, ['cancelled', 'completed'])).status).toBe('cancelled');
        // Completion first: the cancellation changes nothing and reports the winner.
        const fast = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 1 } }, headers: { 'idempotency-key': 'k6c-2' } });
        await waitFor(alice, fast.body.id, ['completed']);
        const late = await alice('POST', `/v1/agent-tasks/${fast.body.id}/cancellation`);
        expect(late.body).toMatchObject({ status: 'completed', cancellation: 'already_terminal' });
        for (const id of [slow.body.id as string, fast.body.id as string]) await expectCleanHistory(store!, id);
      });

      it('7. a client that disconnects and reconnects sees progress, every event once in order, and the result', async () => {
        const created = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 20, stepMs: 40 } }, headers: { 'idempotency-key': 'k7' } });
        const url = `${server!.url}/v1/agent-tasks/${created.body.id}/events`;
        const seen: number[] = [];
        const kinds: string[] = [];
        let last: number | null = null;
        for (let round = 0; round < 60; round++) {
          const r = await readSse(url, ALICE, last, 1 + Math.floor(Math.random() * 4));
          seen.push(...r.ids);
          kinds.push(...r.kinds);
          if (r.ids.length) last = r.ids.at(-1)!;
          if (r.ended || kinds.includes('completed')) break;
          if (round % 3 === 0) {
            const status = await alice('GET', `/v1/agent-tasks/${created.body.id}`);
            expect(['queued', 'working', 'completed']).toContain(status.body.status);
          }
        }
        const all = (await alice('GET', `/v1/agent-tasks/${created.body.id}/events?limit=1000`)).body.events.map((e: { seq: number }) => e.seq);
        expect(seen).toEqual(all);
        expect(kinds.at(-1)).toBe('completed');
        const result = await alice('GET', `/v1/agent-tasks/${created.body.id}/result`);
        expect(result.body).toMatchObject({ status: 'completed', result: { steps_done: 20 } });
        // A stream opened after the end replays what was missed and closes.
        const tail = await readSse(url, ALICE, all.at(-3), 100);
        expect(tail).toMatchObject({ ids: all.slice(-2), ended: true });
      });

      it('status has an ETag, honours If-None-Match and recommends a poll interval; the list filters and pages', async () => {
        await worker!.stop();
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push((await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} }, headers: { 'idempotency-key': `list-${i}` } })).body.id);
        const first = await alice('GET', `/v1/agent-tasks/${ids[0]}`);
        expect(first.headers.get('etag')).toBe('"v1"');
        expect(first.body.poll_interval_ms).toBeGreaterThan(0);
        const notModified = await alice('GET', `/v1/agent-tasks/${ids[0]}`, { headers: { 'if-none-match': '"v1"' } });
        expect(notModified.status).toBe(304);
        const page1 = await alice('GET', '/v1/agent-tasks?limit=2&status=queued&type=synthetic');
        expect(page1.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
        const page2 = await alice('GET', `/v1/agent-tasks?limit=2&status=queued&type=synthetic&cursor=${page1.body.next_cursor}`);
        expect(page2.body).toMatchObject({ tasks: [{ id: ids[0] }], next_cursor: null });
        expect((await alice('GET', '/v1/agent-tasks?status=completed')).body.tasks).toEqual([]);
        expect((await alice('GET', '/v1/agent-tasks?status=bogus')).status).toBe(422);
        const types = await alice('GET', '/v1/task-types');
        expect(types.body.task_types.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['access-review', 'account-migration', 'synthetic']));
        expect(types.body.task_types[0].input_schema).toMatchObject({ type: 'object' });
        expect((await alice('GET', `/v1/agent-tasks/${ids[0]}/result`)).body.code).toBe('result_not_ready');
      });

      it('8. every endpoint called as another tenant, or as another member of the tenant, is denied with no side effect', async () => {
        await worker!.stop();
        const created = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} }, headers: { 'idempotency-key': 'mine' } });
        const id = created.body.id as string;
        const missing = await alice('GET', '/v1/agent-tasks/task_doesnotexist');
        const comparable = (b: Record<string, unknown>) => ({ ...b, instance: undefined });
        for (const intruder of [mallory, bob]) {
          const calls: Reply[] = [
            await intruder('GET', `/v1/agent-tasks/${id}`),
            await intruder('GET', `/v1/agent-tasks/${id}/events`),
            await intruder('GET', `/v1/agent-tasks/${id}/events`, { headers: { accept: 'text/event-stream' } }),
            await intruder('POST', `/v1/agent-tasks/${id}/input`, { body: { answer: true, version: 1, key: 'x' } }),
            await intruder('POST', `/v1/agent-tasks/${id}/cancellation`),
            await intruder('GET', `/v1/agent-tasks/${id}/result`),
            await intruder('GET', `/v1/agent-tasks/${id}/effects`),
          ];
          for (const r of calls) {
            expect(r.status).toBe(404);
            expect(comparable(r.body)).toEqual(comparable(missing.body));
          }
          expect((await intruder('GET', '/v1/agent-tasks')).body.tasks).toEqual([]);
        }
        // Another tenant's identical idempotency key is a different request.
        const theirs = await mallory('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} }, headers: { 'idempotency-key': 'mine' } });
        expect(theirs.status).toBe(202);
        expect(theirs.body.id).not.toBe(id);
        const after = await alice('GET', `/v1/agent-tasks/${id}`);
        expect(after.body).toMatchObject({ status: 'queued', version: 1, cancel_requested_at: null });
        // A tenant admin sees every task of the tenant, and the operator view; members do not.
        expect((await admin('GET', `/v1/agent-tasks/${id}?view=operator`)).body.operator).toMatchObject({ fence: 0 });
        expect((await alice('GET', `/v1/agent-tasks/${id}?view=operator`)).status).toBe(403);
        expect((await client(server!.url, 'not-a-key')('GET', `/v1/agent-tasks/${id}`)).status).toBe(401);
      });

      it('an expired task answers 410 Gone from its tombstone; to other tenants it stays a 404', async () => {
        const created = await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} }, headers: { 'idempotency-key': 'expiring' } });
        const done = await waitFor(alice, created.body.id, ['completed']);
        expect(done.expires_at).not.toBeNull();
        expect(await store!.expireTasks(Date.parse(done.expires_at as string), 10)).toBe(1);
        for (const path of ['', '/events', '/result', '/effects']) {
          const r = await alice('GET', `/v1/agent-tasks/${created.body.id}${path}`);
          expect(r.status).toBe(410);
          expect(r.body).toMatchObject({ code: 'task_expired', final_state: 'completed' });
        }
        expect((await alice('POST', `/v1/agent-tasks/${created.body.id}/cancellation`)).status).toBe(410);
        expect((await mallory('GET', `/v1/agent-tasks/${created.body.id}`)).status).toBe(404);
        expect((await bob('GET', `/v1/agent-tasks/${created.body.id}`)).status).toBe(404);
      });

      it('bad input: 413, 415, 400, 422, too-deep JSON, missing idempotency key; nothing persisted', async () => {
        await worker!.stop();
        let n = 0;
        const post = (raw: string, headers: Record<string, string> = {}) =>
          alice('POST', '/v1/agent-tasks', { raw, headers: { 'content-type': 'application/json', 'idempotency-key': `bad-${++n}`, ...headers } });
        const deep = `{"type":"synthetic","input":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
        const cases: Array<[Reply, number, string]> = [
          [await post(JSON.stringify({ type: 'synthetic', input: { pad: 'x'.repeat(1_100_000) } })), 413, 'payload_too_large'],
          [await post('{"type":"synthetic"}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
          [await post('{"type":'), 400, 'invalid_json'],
          [await post(deep), 400, 'payload_too_deep'],
          [await post('{"type":"synthetic","input":{"steps":"many"}}'), 422, 'validation'],
          [await post('{"type":"no-such-type","input":{}}'), 422, 'unknown_task_type'],
          [await post('{"type":"synthetic","input":{},"surprise":1}'), 422, 'validation'],
          [await post('{"type":"synthetic","input":{"__proto__":{"x":1}}}'), 400, 'invalid_json'],
          [await alice('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: {} } }), 400, 'idempotency_key_required'],
          [await post('{"type":"synthetic","input":{},"callback_url":"ftp://example.com/x"}'), 422, 'validation'],
        ];
        for (const [reply, status, code] of cases) {
          expect(reply.status, JSON.stringify(reply.body).slice(0, 200)).toBe(status);
          expect(reply.headers.get('content-type')).toContain('application/problem+json');
          expect(reply.body).toMatchObject({ status, code, type: `tag:belay.dev,2026:problem:${code}` });
        }
        expect((await admin('GET', '/v1/agent-tasks')).body.tasks).toEqual([]);
        expect(await store!.countByState()).toEqual({});
      });
    });

    it('429 with Retry-After when a principal exceeds its rate', async () => {
      await startInProcess({ rateLimit: { perSecond: 1, burst: 3 } });
      const replies: Reply[] = [];
      for (let i = 0; i < 5; i++) replies.push(await alice('GET', '/v1/agent-tasks'));
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
      expect(Number(replies[3]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(replies[3]!.body.code).toBe('rate_limited');
      // Other principals have their own budget.
      expect((await bob('GET', '/v1/agent-tasks')).status).toBe(200);
    });

    describe('real processes', () => {
      let downstreamServer: DownstreamServer;
      let processStore: Store;
      beforeEach(async () => {
        downstreamServer = await startDownstreamServer();
        processStore = await stores.open();
      });
      afterEach(async () => {
        await downstreamServer.close();
        await processStore.close();
      });

      it('3. a worker killed after the external commit and before its checkpoint does not repeat the effect', async () => {
        const gateway = spawnServer({ db: stores.url(), apiKeys: KEYS });
        try {
          const api = client(await gateway.url, ALICE);
          const created = await api('POST', '/v1/agent-tasks', {
            body: { type: 'synthetic', input: { steps: 3, effectsPerStep: 2, effectUrl: `${downstreamServer.url}/effects` } },
            headers: { 'idempotency-key': 'k3' },
          });
          // Dies right after the downstream accepted the first effect: before the ledger write and the checkpoint.
          const crashing = spawnWorker({ db: stores.url(), downstreamUrl: downstreamServer.url, leaseMs: 1000, crashAt: 'after-effect-sent:1' });
          const exit = await crashing.exited;
          expect(exit.signal).toBe('SIGKILL');
          const key = `${created.body.id}:s0-e0`;
          expect(downstreamServer.effects.get(key)?.calls).toBe(1);
          const clean = spawnWorker({ db: stores.url(), downstreamUrl: downstreamServer.url, leaseMs: 1000 });
          try {
            await eventually(async () => (await api('GET', `/v1/agent-tasks/${created.body.id}`)).body.status === 'completed', 20_000);
          } finally {
            clean.child.kill('SIGKILL');
            await clean.exited;
          }
          // The replay re-sent the uncertain effect under the same key; the downstream applied it once.
          expect(downstreamServer.effects.get(key)?.calls).toBe(2);
          expect(downstreamServer.effects.size).toBe(6);
          await expectCleanHistory(processStore, created.body.id);
        } finally {
          gateway.child.kill('SIGKILL');
          await gateway.exited;
        }
      }, 60_000);

      it('4. pause at input_required, restart every process, answer, resume exactly once', async () => {
        let gateway = spawnServer({ db: stores.url(), apiKeys: KEYS });
        let workerProc = spawnWorker({ db: stores.url(), downstreamUrl: downstreamServer.url, leaseMs: 1000 });
        let api = client(await gateway.url, ALICE);
        const created = await api('POST', '/v1/agent-tasks', { body: { type: 'access-review', input: { systems: 3, revocations: 2 } }, headers: { 'idempotency-key': 'k4' } });
        const paused = await eventually(async () => {
          const r = await api('GET', `/v1/agent-tasks/${created.body.id}`);
          return r.body.status === 'input_required' ? r.body : null;
        }, 20_000);
        for (const p of [gateway, workerProc]) p.child.kill('SIGKILL');
        await Promise.all([gateway.exited, workerProc.exited]);
        gateway = spawnServer({ db: stores.url(), apiKeys: KEYS });
        workerProc = spawnWorker({ db: stores.url(), downstreamUrl: downstreamServer.url, leaseMs: 1000 });
        try {
          api = client(await gateway.url, ALICE);
          const answer = await api('POST', `/v1/agent-tasks/${created.body.id}/input`, { body: { answer: { approved: true }, version: paused.input_request.version } });
          expect(answer.status).toBe(202);
          await eventually(async () => (await api('GET', `/v1/agent-tasks/${created.body.id}`)).body.status === 'completed', 20_000);
          const revoked = [...downstreamServer.downstream.applied.keys()].filter((k) => k.startsWith(`${created.body.id}:revoke:`));
          expect(revoked).toHaveLength(2);
          expect(downstreamServer.downstream.calls).toBe(2);
          const kinds = await expectCleanHistory(processStore, created.body.id);
          expect(kinds.filter((k) => k === 'input_received')).toHaveLength(1);
          expect(kinds.filter((k) => k === 'input_required')).toHaveLength(1);
        } finally {
          for (const p of [gateway, workerProc]) p.child.kill('SIGKILL');
          await Promise.all([gateway.exited, workerProc.exited]);
        }
      }, 60_000);

      it('an SSE stream on a gateway that never ran the task sees the events another process commits', async () => {
        const gateway = spawnServer({ db: stores.url(), apiKeys: KEYS });
        const workerProc = spawnWorker({ db: stores.url(), downstreamUrl: downstreamServer.url, leaseMs: 1000 });
        try {
          const base = await gateway.url;
          const api = client(base, ALICE);
          const created = await api('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 5, stepMs: 30 } }, headers: { 'idempotency-key': 'sse-x' } });
          const r = await readSse(`${base}/v1/agent-tasks/${created.body.id}/events`, ALICE, null, 1000);
          expect(r.ended).toBe(true);
          expect(r.kinds[0]).toBe('created');
          expect(r.kinds.at(-1)).toBe('completed');
          expect(r.ids).toEqual(Array.from({ length: r.ids.length }, (_, i) => i + 1));
        } finally {
          for (const p of [gateway, workerProc]) p.child.kill('SIGKILL');
          await Promise.all([gateway.exited, workerProc.exited]);
        }
      }, 60_000);
    });
  });
}
