/**
 * Webhook delivery on both stores, over real loopback sockets, with an injected clock (retry delays are moved, not
 * waited): a receiver that fails every way the reference lists and then recovers gets every event at least once with
 * the same id; 410 disables and redrive recovers; a receiver using `belay/client`'s WebhookReceiver acts exactly
 * once although each completion callback arrives three times; A2A pushes carry their credentials and token; secret
 * rotation sends two signatures, all checked with the reference `standardwebhooks` library.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebhookReceiver } from '../../src/client/webhook-receiver.js';
import type { Delivery } from '../../src/core/delivery.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { UrlGuard } from '../../src/delivery/ssrf-guard.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { createBelayMetrics } from '../../src/metrics/belay-metrics.js';
import { Worker } from '../../src/runtime/worker.js';
import type { Principal } from '../../src/service/task-service.js';
import { TaskService } from '../../src/service/task-service.js';
import { WebhookService } from '../../src/service/webhook-service.js';
import type { Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { TestReceiver, verifiesWith, type Received } from './receiver.js';

const MIN = 60_000;
const HOUR = 3600_000;
const alice: Principal = { tenant: 'acme', principal: 'alice', role: 'member' };
const ops: Principal = { tenant: 'acme', principal: 'ops', role: 'admin' };

for (const kind of storesUnderTest()) {
  describe(`webhook delivery on ${kind}`, () => {
    const stores = testStores(kind);
    const guard = new UrlGuard({ allow: ['127.0.0.1'] });
    let store: Store;
    let clock: FakeClock;
    let service: TaskService;
    let webhooks: WebhookService;
    let worker: Worker;
    let dispatcher: Dispatcher;
    let receiver: TestReceiver;
    let canary: TestReceiver;
    let n = 0;

    const makeDispatcher = (faultPoint?: (label: string) => void) =>
      new Dispatcher({ store, clock, guard, timeoutMs: 1000, random: () => 0.5, ...(faultPoint ? { faultPoint } : {}) });

    beforeEach(async () => {
      store = await stores.open();
      clock = new FakeClock(Date.UTC(2026, 0, 1));
      const registry = exampleRegistry(new InMemoryDownstream());
      service = new TaskService({ store, registry, clock, urlGuard: guard });
      webhooks = new WebhookService({ store, clock, guard });
      worker = new Worker({ store, registry, clock, leaseMs: 10_000, random: () => 0.5 });
      dispatcher = makeDispatcher();
      receiver = await TestReceiver.start();
      // Not allowlisted: a redirect there must never be followed.
      canary = await TestReceiver.start('127.0.0.2');
    });
    afterEach(async () => {
      await receiver.close();
      await canary.close();
      await store.close();
    });
    afterAll(() => stores.teardown());

    async function createTask(callbackUrl?: string): Promise<string> {
      const { task } = await service.createTask(alice, { type: 'synthetic', input: { steps: 1 }, idempotencyKey: `k${++n}`, ...(callbackUrl ? { callbackUrl } : {}) });
      return task.id;
    }

    const deliveries = async (status?: Delivery['status']) => (await webhooks.listDeliveries(ops, { limit: 100, ...(status ? { status } : {}) })).deliveries;

    /** Routes until `count` deliveries exist (PostgreSQL shows an event to the feed once older transactions ended). */
    async function routed(count: number): Promise<Delivery[]> {
      return eventually(async () => {
        await dispatcher.route();
        const ds = await deliveries();
        return ds.length >= count ? ds : null;
      });
    }

    it('a receiver failing with 500, a timeout, 429 + Retry-After and a redirect, then recovering, gets every event with the same id', async () => {
      const replies = [{ status: 500 }, 'hang', { status: 429, headers: { 'retry-after': '7200' } }, { status: 302, headers: { location: `${canary.url}/stolen` } }] as const;
      receiver.script = (r) => replies[r.nth - 1] ?? { status: 204 };
      const id = await createTask(`${receiver.url}/cb`);
      await worker.drain();
      await routed(2); // task.started and task.completed
      const due = async () => (await deliveries()).map((d) => d.nextAttemptAt);

      const t0 = clock.now();
      expect((await dispatcher.runOnce()).attempts).toBe(2); // 500
      expect(await due()).toEqual([t0 + 5000, t0 + 5000]); // schedule[0] = 5 s (jitter factor 1.0 at random 0.5)
      clock.advance(4999);
      expect((await dispatcher.runOnce()).attempts).toBe(0);
      clock.advance(1);
      expect((await dispatcher.runOnce()).attempts).toBe(2); // timeout (1 s)
      expect((await deliveries()).every((d) => /no response within 1000 ms/.test(d.lastError ?? ''))).toBe(true);
      expect(await due()).toEqual([clock.now() + 5 * MIN, clock.now() + 5 * MIN]);
      clock.advance(5 * MIN);
      expect((await dispatcher.runOnce()).attempts).toBe(2); // 429, Retry-After 2 h beats the 30 min schedule
      expect(await due()).toEqual([clock.now() + 2 * HOUR, clock.now() + 2 * HOUR]);
      clock.advance(2 * HOUR - 1);
      expect((await dispatcher.runOnce()).attempts).toBe(0);
      clock.advance(1);
      expect((await dispatcher.runOnce()).attempts).toBe(2); // 302: a failure, not followed
      expect((await deliveries()).every((d) => d.lastStatus === 302 && d.lastError === 'redirect 302 not followed')).toBe(true);
      clock.advance(2 * HOUR);
      expect((await dispatcher.runOnce()).attempts).toBe(2); // recovered
      const done = await deliveries();
      expect(done.map((d) => [d.status, d.attempts])).toEqual([
        ['delivered', 5],
        ['delivered', 5],
      ]);

      const secret = (await webhooks.getCallbackSecrets(ops))[0]!.secret;
      const ids = receiver.ids().sort();
      expect(ids).toEqual([`evt_${id.slice(5)}_2`, `evt_${id.slice(5)}_3`]);
      for (const eventId of ids) {
        const attempts = receiver.received.filter((r) => r.id === eventId);
        expect(attempts).toHaveLength(5);
        expect(new Set(attempts.map((a) => a.body)).size).toBe(1); // the same bytes every time
        expect(new Set(attempts.map((a) => a.timestamp)).size).toBe(5); // a fresh timestamp per attempt
        for (const a of attempts) expect(verifiesWith(secret, a)).toBe(true);
        expect(JSON.parse(attempts[0]!.body)).toMatchObject({ id: eventId, data: { task_id: id, task_url: `/v1/agent-tasks/${id}` } });
      }
      expect(receiver.received.map((r) => JSON.parse(r.body).type as string).sort()).toEqual([...Array(5).fill('task.completed'), ...Array(5).fill('task.started')]);
      expect(canary.connections).toBe(0);
    });

    it('attempts are bounded: after the last scheduled retry the delivery is a dead letter, and redrive sends it again with the same id', async () => {
      receiver.script = () => ({ status: 503 });
      const short = new Dispatcher({ store, clock, guard, timeoutMs: 1000, random: () => 0.5, retry: { schedule: [1000, 2000], jitter: 0.2, maxRetryAfterMs: HOUR } });
      await createTask(`${receiver.url}/cb`);
      await worker.drain();
      await routed(2);
      await short.runOnce();
      clock.advance(1000);
      await short.runOnce();
      clock.advance(2000);
      await short.runOnce();
      const dead = await deliveries('dead');
      expect(dead.map((d) => [d.attempts, d.deadReason, d.lastStatus])).toEqual([
        [3, 'attempts_exhausted', 503],
        [3, 'attempts_exhausted', 503],
      ]);
      receiver.script = () => ({ status: 200 });
      for (const d of dead) expect(await webhooks.redrive(ops, { deliveryId: d.id })).toBe(1);
      await short.runOnce();
      expect((await deliveries()).every((d) => d.status === 'delivered')).toBe(true);
      for (const d of dead) expect(receiver.received.filter((r) => r.id === d.eventId)).toHaveLength(4);
      await expect(webhooks.redrive(ops, { deliveryId: dead[0]!.id })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(webhooks.redrive(alice, { deliveryId: dead[0]!.id })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    });

    it('410 disables the endpoint and dead-letters what is queued for it; enabling and redriving delivers everything with the same ids', async () => {
      receiver.script = () => ({ status: 410 });
      const { endpoint, secret } = await webhooks.createEndpoint(ops, { url: `${receiver.url}/hooks`, eventTypes: ['task.created', 'task.completed'] });
      await createTask();
      await worker.drain();
      await routed(2);
      await dispatcher.runOnce();
      expect(await webhooks.getEndpoint(ops, endpoint.id)).toMatchObject({ enabled: false, disabledReason: 'gone' });
      const goneIds = receiver.ids();
      expect(goneIds.length).toBeGreaterThanOrEqual(1);
      // While disabled, new events are kept as dead letters, not sent.
      const before = receiver.received.length;
      await createTask();
      await worker.drain();
      await routed(4);
      await dispatcher.runOnce();
      expect(receiver.received.length).toBe(before);
      const dead = await deliveries('dead');
      expect(dead).toHaveLength(4);
      expect(new Set(dead.map((d) => d.deadReason))).toEqual(new Set(['gone', 'target_gone', 'endpoint_disabled'].filter((r) => dead.some((d) => d.deadReason === r))));
      expect(dead.every((d) => ['gone', 'target_gone', 'endpoint_disabled'].includes(d.deadReason!))).toBe(true);

      receiver.script = () => ({ status: 200 });
      await webhooks.updateEndpoint(ops, endpoint.id, { enabled: true });
      expect(await webhooks.redrive(ops, { endpointId: endpoint.id })).toBe(4);
      await dispatcher.runOnce();
      expect((await deliveries()).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
      const delivered = receiver.received.filter((r) => r.nth === receiver.received.filter((x) => x.id === r.id).length);
      expect(new Set(delivered.map((r) => r.id))).toEqual(new Set(dead.map((d) => d.eventId)));
      for (const id of goneIds) expect(receiver.received.filter((r) => r.id === id).length).toBe(2); // the 410 and the redrive
      for (const r of receiver.received) expect(verifiesWith(secret, r)).toBe(true);
    });

    it('a receiver using WebhookReceiver acts exactly once although each completion callback arrives three times', async () => {
      const secret = (await webhooks.getCallbackSecrets(ops))[0]!.secret;
      const helper = new WebhookReceiver({ secret, now: () => clock.now() });
      const acted = new Map<string, number>();
      receiver.script = (r: Received) => async (req, body, res) => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
        const response = await helper.handle(new Request(`http://receiver${r.path}`, { method: 'POST', headers, body }), (event) => {
          acted.set(event.id, (acted.get(event.id) ?? 0) + 1);
        });
        // The first answer is lost on the way back (a 503 from a proxy, say): Belay must send it again.
        res.writeHead(r.nth === 1 ? 503 : response.status);
        res.end();
      };
      const ids = [await createTask(`${receiver.url}/cb`), await createTask(`${receiver.url}/cb`), await createTask(`${receiver.url}/cb`)];
      await worker.drain();
      await routed(6);
      await dispatcher.runOnce(); // delivered and acted on, but the answer was lost
      clock.advance(5000);
      // This dispatcher "dies" right after the 2xx, before recording it.
      const crashing = makeDispatcher((label) => {
        if (label === 'after-webhook-2xx') throw new Error('simulated crash after the 2xx');
      });
      await expect(crashing.runOnce()).rejects.toThrow('simulated crash');
      expect((await deliveries('pending')).length).toBe(6); // still owed
      clock.advance(6000 + 1); // the dead dispatcher's lease lapses
      await dispatcher.runOnce();
      expect((await deliveries()).every((d) => d.status === 'delivered')).toBe(true);

      const completions = ids.map((id) => `evt_${id.slice(5)}_3`);
      for (const eventId of completions) expect(receiver.received.filter((r) => r.id === eventId)).toHaveLength(3);
      expect([...acted.keys()].sort()).toEqual(receiver.ids().sort());
      expect([...acted.values()].every((v) => v === 1)).toBe(true);
      expect(acted.size).toBe(6);
    });

    it('A2A push configs get a StreamResponse with their Authorization and both token headers', async () => {
      const id = await createTask();
      await service.putPushConfig(alice, id, { url: `${receiver.url}/a2a`, token: 'tok-123', authentication: { scheme: 'Bearer', credentials: 'push-secret' } });
      await worker.drain();
      await routed(2);
      await dispatcher.runOnce();
      const states = receiver.received.map((r) => JSON.parse(r.body).statusUpdate.status.state as string).sort();
      expect(states).toEqual(['TASK_STATE_COMPLETED', 'TASK_STATE_WORKING']);
      for (const r of receiver.received) {
        expect(r.headers).toMatchObject({
          authorization: 'Bearer push-secret',
          'x-a2a-notification-token': 'tok-123',
          'a2a-notification-token': 'tok-123',
          'content-type': 'application/a2a+json',
        });
        expect(r.id).toMatch(/^evt_/);
        expect(JSON.parse(r.body).statusUpdate).toMatchObject({ taskId: id });
      }
    });

    it('secret rotation: two signatures during the overlap, either secret verifies; the old one stops after the overlap', async () => {
      const oldSecret = (await webhooks.getCallbackSecrets(ops))[0]!.secret;
      const newSecret = await webhooks.rotateCallbackSecret(ops, { overlapMs: HOUR });
      expect(newSecret).toMatch(/^whsec_/);
      expect(await webhooks.getCallbackSecrets(ops)).toHaveLength(2);
      await createTask(`${receiver.url}/cb`);
      await worker.drain();
      await routed(2);
      await dispatcher.runOnce();
      for (const r of receiver.received) {
        expect(r.signature.split(' ')).toHaveLength(2);
        expect(verifiesWith(oldSecret, r)).toBe(true);
        expect(verifiesWith(newSecret, r)).toBe(true);
        expect(await new WebhookReceiver({ secret: oldSecret, now: () => r.timestamp * 1000 }).verify(r.headers as Record<string, string>, r.body)).toMatchObject({ id: r.id });
      }
      clock.advance(HOUR);
      expect(await webhooks.getCallbackSecrets(ops)).toHaveLength(1);
      await createTask(`${receiver.url}/cb`);
      await worker.drain();
      await routed(4);
      const before = receiver.received.length;
      await dispatcher.runOnce();
      for (const r of receiver.received.slice(before)) {
        expect(r.signature.split(' ')).toHaveLength(1);
        expect(verifiesWith(newSecret, r)).toBe(true);
        expect(verifiesWith(oldSecret, r)).toBe(false);
      }
    });

    it('counts attempts and failures in the metrics, and tasks and deliveries by state from the store', async () => {
      const metrics = createBelayMetrics({ store, now: () => clock.now() });
      const metered = new Dispatcher({ store, clock, guard, timeoutMs: 1000, random: () => 0.5, metrics });
      receiver.script = (r) => (r.nth === 1 ? { status: 500 } : { status: 200 });
      await createTask(`${receiver.url}/cb`);
      await worker.drain();
      await eventually(async () => {
        await metered.route();
        return (await deliveries()).length >= 2;
      });
      await metered.runOnce();
      clock.advance(5000);
      await metered.runOnce();
      const text = await metrics.registry.render();
      expect(text).toContain('belay_webhook_attempts_total{result="retry",target="callback"} 2');
      expect(text).toContain('belay_webhook_attempts_total{result="delivered",target="callback"} 2');
      expect(text).toContain('belay_webhook_failures_total{reason="server_error",target="callback"} 2');
      expect(text).toContain('belay_tasks{state="completed"} 1');
      expect(text).toContain('belay_webhook_deliveries{status="delivered"} 2');
      expect(text).toMatch(/# TYPE belay_step_duration_seconds histogram/);
    });
  });
}
