/**
 * The reconciler on both stores with an injected clock: stuck queued and working tasks recover within the documented
 * bound; queued tasks nobody can run fail after bounded re-dispatches; retention turns expired tasks into tombstones
 * (410 over REST, rows gone, deliveries included) and an idempotency key reused after expiry names a new task; the
 * stranded invariant as a query (`GET /v1/admin/stranded`) and a metric (`/metrics`).
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newTaskId } from '../../src/core/ids.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { UrlGuard } from '../../src/delivery/ssrf-guard.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { createBelayMetrics, meterStore } from '../../src/metrics/belay-metrics.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { findStrandedTasks, Reconciler } from '../../src/reconciler/reconciler.js';
import type { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService, type Principal } from '../../src/service/task-service.js';
import { WebhookService } from '../../src/service/webhook-service.js';
import type { Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { TestReceiver } from '../delivery/receiver.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const DAY = 24 * 3600_000;
const GRACE = 60_000;
const LEASE = 10_000;
const ops: Principal = { tenant: 'acme', principal: 'ops', role: 'admin' };
const ADMIN = 'key-admin-0123456789abcdefg';
const ALICE = 'key-alice-0123456789abcdef';
const MALLORY = 'key-mallory-0123456789abcdef';
const GLOBEX_ADMIN = 'key-globex-0123456789abcdefg';

for (const kind of storesUnderTest()) {
  describe(`reconciler on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let clock: FakeClock;
    let registry: TaskTypeRegistry;
    let service: TaskService;
    let worker: Worker;
    let reconciler: Reconciler;

    beforeEach(async () => {
      store = await stores.open();
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      registry = exampleRegistry(new InMemoryDownstream());
      service = new TaskService({ store, registry, clock });
      worker = new Worker({ store, registry, clock, leaseMs: LEASE, random: () => 0.5, retentionMs: DAY, expireTasks: false });
      reconciler = new Reconciler({ store, clock, graceMs: GRACE, maxRedispatches: 3, runnableKinds: registry.kinds() });
    });
    afterEach(async () => {
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('a stuck queued task (its wake-up lost) is repaired by the first sweep and then runs', async () => {
      const { task } = await service.createTask(ops, { type: 'synthetic', input: { steps: 1 } });
      await store.transition(task.id, undefined, clock.now(), () => ({ set: { wakeAt: null }, bumpFence: false, event: null }));
      expect(await worker.drain()).toBe(0); // nothing claims a task without a wake-up
      expect((await findStrandedTasks(store, { now: clock.now(), graceMs: GRACE })).map((t) => [t.id, t.reason])).toEqual([[task.id, 'no_wake_up']]);
      const report = await reconciler.sweep();
      expect(report).toMatchObject({ stranded: 1, wakeUpsRepaired: 1 });
      await worker.drain();
      expect((await service.getTask(ops, task.id)).state).toBe('completed');
      expect(await findStrandedTasks(store, { now: clock.now(), graceMs: GRACE })).toEqual([]);
    });

    it('a stuck working task (its worker died holding the lease) is claimed again once the lease ends', async () => {
      const { task } = await service.createTask(ops, { type: 'synthetic', input: { steps: 2 } });
      const [held] = await store.claimTasks({ workerId: 'w-dead', now: clock.now(), leaseMs: LEASE, limit: 1, kinds: registry.kinds() });
      expect(held!.task.id).toBe(task.id);
      clock.advance(LEASE - 1);
      expect(await worker.drain()).toBe(0); // the lease still holds
      clock.advance(1);
      await worker.drain(); // bound: lease + one poll
      const done = await service.getTask(ops, task.id);
      expect(done.state).toBe('completed');
      expect(done.fence).toBeGreaterThan(held!.lease.fence);
      // Left unclaimed past the grace (no live worker for it), it is reported with why, and re-dispatched.
      const { task: orphan } = await service.createTask(ops, { type: 'synthetic', input: { steps: 2 } });
      await store.claimTasks({ workerId: 'w-dead', now: clock.now(), leaseMs: LEASE, limit: 1, kinds: registry.kinds() });
      clock.advance(LEASE + GRACE + 1);
      expect((await findStrandedTasks(store, { now: clock.now(), graceMs: GRACE })).map((t) => [t.id, t.reason])).toEqual([[orphan.id, 'lease_expired']]);
      expect((await reconciler.sweep()).redispatched).toBe(1);
      const events = await store.listEvents(orphan.id, 0, 100);
      expect(events.at(-1)).toMatchObject({ kind: 'retry_scheduled', body: { state: 'working', reason: 'redispatch', redispatch: 1 } });
      await worker.drain();
      expect((await service.getTask(ops, orphan.id)).state).toBe('completed');
    });

    it('a queued task no worker here can run is re-dispatched at most once per grace, then fails after the bound; a runnable one never fails', async () => {
      const ghost = (await store.createTask({ id: newTaskId(clock.now()), tenant: 'acme', contextId: 'c', type: 'ghost', typeVersion: 1, input: {}, createdBy: 'ops', callbackUrl: null, now: clock.now() })).task;
      const backlog = (await service.createTask(ops, { type: 'synthetic', input: {} })).task; // runnable here; no worker drains it
      const redispatches = async (id: string) => (await store.listEvents(id, 0, 100)).filter((e) => e.kind === 'retry_scheduled').length;
      clock.advance(GRACE + 1);
      await reconciler.sweep();
      await reconciler.sweep(); // same instant: no second re-dispatch
      expect(await redispatches(ghost.id)).toBe(1);
      for (let i = 0; i < 3; i++) {
        clock.advance(GRACE);
        await reconciler.sweep();
      }
      expect(await redispatches(ghost.id)).toBe(3);
      const failed = await store.getTask(ghost.id);
      expect(failed).toMatchObject({ state: 'failed', error: { code: 'ATTEMPTS_EXHAUSTED' }, wakeAt: null });
      expect(failed!.expiresAt).not.toBeNull();
      // The backlog task was re-dispatched up to the bound and left queued for its worker.
      expect(await redispatches(backlog.id)).toBe(3);
      expect((await store.getTask(backlog.id))!.state).toBe('submitted');
      await worker.drain();
      expect((await store.getTask(backlog.id))!.state).toBe('completed');
    });

    it('input deadlines fire from the sweep', async () => {
      const { task } = await service.createTask(ops, { type: 'synthetic', input: { steps: 2, askAtStep: 1 } });
      await worker.drain();
      expect((await service.getTask(ops, task.id)).state).toBe('input_required');
      clock.advance(8 * DAY);
      expect((await reconciler.sweep()).deadlines).toBe(1);
      expect(await service.getTask(ops, task.id)).toMatchObject({ state: 'failed', error: { code: 'INPUT_DEADLINE_EXPIRED' } });
    });

    describe('over REST', () => {
      let server: RunningServer;
      let receiver: TestReceiver;
      const call = async (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        let parsed: any = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // text
        }
        return { status: res.status, headers: res.headers, body: parsed };
      };

      beforeEach(async () => {
        receiver = await TestReceiver.start();
        const guard = new UrlGuard({ allow: ['127.0.0.1'] });
        const metrics = createBelayMetrics({ store, now: () => clock.now() });
        service = new TaskService({ store, registry, clock, urlGuard: guard });
        worker = new Worker({ store: meterStore(store, metrics, () => clock.now()), registry, clock, leaseMs: LEASE, random: () => 0.5, retentionMs: DAY, expireTasks: false });
        const auth = new Authenticator({ apiKeys: [`${ADMIN}=acme:ops:admin`, `${ALICE}=acme:alice`, `${MALLORY}=globex:mallory`, `${GLOBEX_ADMIN}=globex`].map(parseApiKeySpec) });
        const app = createBelayApp({ service, auth, rateLimit: null, webhooks: new WebhookService({ store, clock, guard }), metrics });
        server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      });
      afterEach(async () => {
        await server.close();
        await receiver.close();
      });

      it('an expired task answers 410 and its rows are gone; its idempotency key then names a new task', async () => {
        const ep = await call(ADMIN, 'POST', '/v1/webhook-endpoints', { url: `${receiver.url}/hooks`, event_types: ['task.completed'] });
        expect(ep.status).toBe(201);
        expect(ep.body.secret).toMatch(/^whsec_/);
        const first = await call(ALICE, 'POST', '/v1/agent-tasks', { type: 'synthetic', input: { steps: 1 }, callback_url: `${receiver.url}/cb` }, { 'idempotency-key': 'reuse-me' });
        expect(first.status).toBe(202);
        const id = first.body.id as string;
        await worker.drain();
        const dispatcher = new Dispatcher({ store, clock, guard: new UrlGuard({ allow: ['127.0.0.1'] }), timeoutMs: 1000 });
        await eventually(async () => {
          await dispatcher.runOnce();
          return (await store.listDeliveries({ tenant: 'acme', taskId: id, limit: 10 })).filter((d) => d.status === 'delivered').length === 3;
        });
        const done = (await call(ALICE, 'GET', `/v1/agent-tasks/${id}`)).body;
        expect(done.status).toBe('completed');
        // Before expiry the key replays the task.
        const replay = await call(ALICE, 'POST', '/v1/agent-tasks', { type: 'synthetic', input: { steps: 1 }, callback_url: `${receiver.url}/cb` }, { 'idempotency-key': 'reuse-me' });
        expect(replay.body.id).toBe(id);
        expect(replay.headers.get('idempotency-replayed')).toBe('true');

        clock.set(Date.parse(done.expires_at as string));
        expect((await reconciler.sweep()).expired).toBe(1);
        for (const path of ['', '/events', '/result', '/effects']) {
          const r = await call(ALICE, 'GET', `/v1/agent-tasks/${id}${path}`);
          expect(r.status).toBe(410);
          expect(r.body).toMatchObject({ code: 'task_expired', final_state: 'completed' });
        }
        expect((await call(MALLORY, 'GET', `/v1/agent-tasks/${id}`)).status).toBe(404);
        // Its rows are gone: the task, its events, its ledger, its deliveries.
        expect(await store.getTask(id)).toBeNull();
        expect(await store.listEvents(id, 0, 100)).toEqual([]);
        expect(await store.listEffects(id)).toEqual([]);
        expect(await store.listDeliveries({ tenant: 'acme', taskId: id, limit: 10 })).toEqual([]);
        expect((await call(ADMIN, 'GET', `/v1/webhook-deliveries?task_id=${id}`)).body.deliveries).toEqual([]);
        // Documented: the key expired with its task, so the same key and body are a new request.
        const again = await call(ALICE, 'POST', '/v1/agent-tasks', { type: 'synthetic', input: { steps: 1 }, callback_url: `${receiver.url}/cb` }, { 'idempotency-key': 'reuse-me' });
        expect(again.status).toBe(202);
        expect(again.body.id).not.toBe(id);
        expect(again.headers.get('idempotency-replayed')).toBeNull();
      });

      it('the stranded report for admins, and /metrics in Prometheus text', async () => {
        const created = await call(ALICE, 'POST', '/v1/agent-tasks', { type: 'synthetic', input: {} }, { 'idempotency-key': 's1' });
        await store.transition(created.body.id as string, undefined, clock.now(), () => ({ set: { wakeAt: null }, bumpFence: false, event: null }));
        const report = await call(ADMIN, 'GET', '/v1/admin/stranded?grace_seconds=60');
        expect(report.status).toBe(200);
        expect(report.body).toMatchObject({ count: 1, stranded: [{ id: created.body.id, reason: 'no_wake_up', state: 'submitted' }] });
        expect((await call(ALICE, 'GET', '/v1/admin/stranded')).status).toBe(403);
        expect((await call(GLOBEX_ADMIN, 'GET', '/v1/admin/stranded')).body.count).toBe(0);
        const metrics = await fetch(`${server.url}/metrics`);
        expect(metrics.headers.get('content-type')).toContain('text/plain; version=0.0.4');
        const text = await metrics.text();
        expect(text).toContain('belay_stranded_tasks 1');
        expect(text).toContain('belay_tasks{state="submitted"} 1');
        await reconciler.sweep();
        await worker.drain();
        const after = await (await fetch(`${server.url}/metrics`)).text();
        expect(after).toContain('belay_stranded_tasks 0');
        expect(after).toContain('belay_claims_total 1');
        expect(after).toMatch(/belay_step_duration_seconds_count [1-9]/);
        expect(after).toContain('belay_lease_losses_total 0');
      });

      it('webhook admin routes: endpoints, secrets, rotation, deliveries; members are refused', async () => {
        const created = await call(ADMIN, 'POST', '/v1/webhook-endpoints', { url: `${receiver.url}/hooks`, description: 'ops' });
        expect(created.status).toBe(201);
        const id = created.body.id as string;
        expect((await call(ALICE, 'GET', '/v1/webhook-endpoints')).status).toBe(403);
        expect((await call(GLOBEX_ADMIN, 'GET', `/v1/webhook-endpoints/${id}`)).status).toBe(404);
        expect((await call(ADMIN, 'GET', '/v1/webhook-endpoints')).body.endpoints.map((e: { id: string }) => e.id)).toEqual([id]);
        expect((await call(ADMIN, 'PATCH', `/v1/webhook-endpoints/${id}`, { event_types: ['task.failed'] })).body.event_types).toEqual(['task.failed']);
        expect((await call(ADMIN, 'PATCH', `/v1/webhook-endpoints/${id}`, { event_types: ['task.nope'] })).status).toBe(422);
        const rotated = await call(ADMIN, 'POST', `/v1/webhook-endpoints/${id}/secret/rotate`);
        expect(rotated.body.secret).not.toBe(created.body.secret);
        const secrets = (await call(ADMIN, 'GET', `/v1/webhook-endpoints/${id}/secret`)).body.secrets as Array<{ secret: string }>;
        expect(secrets.map((s) => s.secret)).toEqual([rotated.body.secret, created.body.secret]);
        expect((await call(ADMIN, 'POST', '/v1/webhook-endpoints', { url: `${receiver.url}/x`, secret: 'whsec_c2hvcnQ=' })).status).toBe(422);
        expect((await call(ADMIN, 'GET', '/v1/webhook-callback-secret')).body.secrets).toHaveLength(1);
        expect((await call(ADMIN, 'GET', '/v1/webhook-deliveries?status=dead')).body).toEqual({ deliveries: [], next_cursor: null });
        expect((await call(ADMIN, 'POST', '/v1/webhook-deliveries/dlv_nope/redrive')).status).toBe(404);
        expect((await call(ADMIN, 'DELETE', `/v1/webhook-endpoints/${id}`)).status).toBe(204);
        expect((await call(ADMIN, 'DELETE', `/v1/webhook-endpoints/${id}`)).status).toBe(404);
      });
    });
  });
}
