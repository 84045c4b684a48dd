/**
 * SSRF (reference §8 S17) on both stores: every address form in the reference is refused at registration (REST
 * `callback_url`, webhook endpoints, A2A push configs: 422) AND at connect time (tasks whose URLs never passed
 * registration, a DNS name that rebinds to loopback after registration, a redirect to loopback) — and loopback canary
 * listeners receive no connection at all.
 */
import type { LookupAddress } from 'node:dns';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { Dispatcher } from '../../src/delivery/dispatcher.js';
import { guardedSender } from '../../src/delivery/http-sender.js';
import { UrlGuard } from '../../src/delivery/ssrf-guard.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService, type Principal } from '../../src/service/task-service.js';
import { WebhookService } from '../../src/service/webhook-service.js';
import type { Store } from '../../src/store/port.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { TestReceiver } from './receiver.js';

const ADMIN = 'key-admin-0123456789abcdefg';
const ops: Principal = { tenant: 'acme', principal: 'ops', role: 'admin' };

describe('UrlGuard address policy', () => {
  const guard = new UrlGuard();
  it.each([
    ['127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.100.100.200', 'carrierGradeNat'],
    ['168.63.129.16', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['::ffff:127.0.0.1', 'ipv4Mapped'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
    ['2001::1', 'teredo'],
    ['ff02::1', 'multicast'],
  ])('refuses %s (%s)', (address, why) => {
    expect(guard.refusal(address)).toBe(why);
  });
  it('allows public unicast, and what the allowlist names (address, CIDR, host)', async () => {
    expect(guard.refusal('93.184.216.34')).toBeNull();
    expect(guard.refusal('2606:4700::1111')).toBeNull();
    const open = new UrlGuard({ allow: ['127.0.0.1', '10.0.0.0/8', '[::1]', 'hooks.internal'], resolver: async () => [{ address: '192.168.9.9', family: 4 }] });
    expect(open.refusal('127.0.0.1')).toBeNull();
    expect(open.refusal('10.9.8.7')).toBeNull();
    expect(open.refusal('::1')).toBeNull();
    expect(open.refusal('127.0.0.2')).toBe('loopback');
    expect((await open.checkUrl('http://hooks.internal/x')).hostname).toBe('hooks.internal');
    await expect(open.checkUrl('http://other.internal/x')).rejects.toMatchObject({ code: 'VALIDATION', details: { reason: 'ssrf_refused', refused: 'private' } });
  });
});

for (const kind of storesUnderTest()) {
  describe(`SSRF on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let canary: TestReceiver;
    let canary6: TestReceiver;
    let server: RunningServer;
    let lookups: string[];
    /** A rebinding DNS server: public at registration, loopback at connect time. */
    const resolver = async (hostname: string): Promise<LookupAddress[]> => {
      if (hostname !== 'rebind.test') throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      lookups.push(hostname);
      return lookups.length === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    };

    beforeEach(async () => {
      store = await stores.open();
      canary = await TestReceiver.start('127.0.0.1');
      canary6 = await TestReceiver.start('::1');
      lookups = [];
    });
    afterEach(async () => {
      await server?.close();
      await canary.close();
      await canary6.close();
      await store.close();
    });
    afterAll(() => stores.teardown());

    const forms = () => [
      `http://127.0.0.1:${canary.port}/`,
      `http://2130706433:${canary.port}/`,
      `http://0:${canary.port}/`,
      `http://0177.0.0.1:${canary.port}/`,
      `http://[::ffff:127.0.0.1]:${canary.port}/`,
      `http://[::1]:${canary6.port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://[fc00::1]/',
      `http://localhost.:${canary.port}/`,
      `http://localhost:${canary.port}/`,
    ];

    it('every form is refused at registration with 422: task callback_url, webhook endpoint, A2A push config', async () => {
      const registry = exampleRegistry(new InMemoryDownstream());
      const guard = new UrlGuard({ resolver });
      const service = new TaskService({ store, registry, clock: systemClock, urlGuard: guard });
      const app = createBelayApp({ service, auth: new Authenticator({ apiKeys: [parseApiKeySpec(`${ADMIN}=acme:ops:admin`)] }), rateLimit: null, webhooks: new WebhookService({ store, clock: systemClock, guard }) });
      server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      const post = async (path: string, body: unknown, extra: Record<string, string> = {}) => {
        const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...extra }, body: JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      let n = 0;
      for (const url of forms()) {
        const task = await post('/v1/agent-tasks', { type: 'synthetic', input: {}, callback_url: url }, { 'idempotency-key': `k${++n}` });
        expect(task.status, url).toBe(422);
        expect(task.body, url).toMatchObject({ code: 'validation', reason: 'ssrf_refused' });
        const ep = await post('/v1/webhook-endpoints', { url });
        expect(ep.status, url).toBe(422);
        expect(ep.body.reason, url).toBe('ssrf_refused');
      }
      const { task } = await service.createTask(ops, { type: 'synthetic', input: {} });
      for (const url of forms()) await expect(service.putPushConfig(ops, task.id, { url }), url).rejects.toMatchObject({ code: 'VALIDATION', details: { reason: 'ssrf_refused' } });
      // The rebinding name looks public when it is registered...
      expect((await post('/v1/webhook-endpoints', { url: `http://rebind.test:${canary.port}/hook` })).status).toBe(201);
      expect(await store.countByState()).toEqual({ submitted: 1 });
      expect(canary.connections + canary6.connections).toBe(0);
    });

    it('at connect time: URLs that skipped registration, a name rebinding to loopback, a redirect to loopback — nothing reaches the canaries', async () => {
      // Only the redirecting receiver is allowlisted (127.0.0.2); the canaries are not.
      const redirector = await TestReceiver.start('127.0.0.2');
      redirector.script = () => ({ status: 307, headers: { location: `http://127.0.0.1:${canary.port}/stolen` } });
      try {
        const guard = new UrlGuard({ allow: ['127.0.0.2'], resolver });
        const registry = exampleRegistry(new InMemoryDownstream());
        // A service without the registration check: as if these URLs had been stored before the policy tightened.
        const unguarded = new TaskService({ store, registry, clock: systemClock });
        const webhooks = new WebhookService({ store, clock: systemClock, guard });
        await webhooks.createEndpoint(ops, { url: `http://rebind.test:${canary.port}/hook`, eventTypes: ['task.created'] });
        for (const url of [...forms(), `${redirector.url}/hook`]) await unguarded.createTask(ops, { type: 'synthetic', input: {}, callbackUrl: url });
        const dispatcher = new Dispatcher({ store, clock: systemClock, sender: guardedSender(guard), timeoutMs: 2000, retry: { schedule: [60_000], jitter: 0, maxRetryAfterMs: 60_000 } });
        // Run the tasks: their callbacks fire on task.started and task.completed; the endpoint hears task.created.
        await new Worker({ store, registry, clock: systemClock, leaseMs: 10_000 }).drain();
        const total = forms().length * 2 + 2 + forms().length + 1; // callbacks (started + completed) and the endpoint's created events
        const deadline = Date.now() + 20_000;
        let deliveries = await webhooks.listDeliveries(ops, { limit: 100 });
        while (Date.now() < deadline) {
          await dispatcher.runOnce();
          deliveries = await webhooks.listDeliveries(ops, { limit: 100 });
          if (deliveries.deliveries.length >= total && deliveries.deliveries.every((d) => d.attempts > 0)) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        const all = deliveries.deliveries;
        expect(all.length).toBe(total);
        const toRedirector = all.filter((d) => d.url.startsWith(redirector.url));
        const refused = all.filter((d) => !d.url.startsWith(redirector.url));
        expect(refused.every((d) => d.status === 'dead' && d.deadReason === 'ssrf_refused'), JSON.stringify(refused.filter((d) => d.deadReason !== 'ssrf_refused').map((d) => [d.url, d.status, d.lastError]))).toBe(true);
        // The redirect was answered, not followed: a failure, retried later.
        expect(toRedirector.every((d) => d.status === 'pending' && d.lastStatus === 307 && d.lastError === 'redirect 307 not followed')).toBe(true);
        expect(redirector.received.length).toBe(2);
        // The rebinding name was resolved again at connect time, and its loopback answer refused.
        expect(lookups.length).toBeGreaterThanOrEqual(2);
        expect(refused.filter((d) => d.targetKind === 'endpoint').every((d) => /127\.0\.0\.1.*loopback/.test(d.lastError ?? ''))).toBe(true);
        expect(canary.connections).toBe(0);
        expect(canary6.connections).toBe(0);
      } finally {
        await redirector.close();
      }
    });
  });
}
