/**
 * The dispatcher SIGKILLed mid-delivery (reference §8 S12), on both stores, with real processes: `belay serve` kills
 * itself at the `after-webhook-2xx` crash point — the receiver answered 2xx, the delivery is not recorded — and the
 * restarted server sends the same event again, with the same `webhook-id`, once the dead process's lease lapses.
 * Nothing is lost: every event ends delivered, and no event ever arrives under a different id.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/port.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { TestReceiver } from './receiver.js';

const BIN = fileURLToPath(new URL('../../bin/belay.js', import.meta.url));
const KEY = 'key-ops-0123456789abcdefghij';

function serve(db: string, crashAt = ''): { child: ChildProcess; url: Promise<string>; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, [BIN, 'serve', '--db', db, '--port', '0', '--workers', '2', '--lease-ms', '1000', '--poll-ms', '50', '--api-key', `${KEY}=acme:ops:admin`], {
    env: { ...process.env, BELAY_LOG_LEVEL: 'error', BELAY_CRASH_AT: crashAt, BELAY_API_KEYS: '', BELAY_WEBHOOK_ALLOWLIST: '127.0.0.1', BELAY_WEBHOOK_TIMEOUT_MS: '500', BELAY_DOWNSTREAM_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-10_000)));
  const url = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`serve exited before READY: ${err}`)));
  });
  url.catch(() => {});
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, url, exited };
}

for (const kind of storesUnderTest()) {
  describe(`dispatcher crash on ${kind}`, () => {
    const stores = testStores(kind);
    let receiver: TestReceiver;
    let store: Store;
    const children: ChildProcess[] = [];

    beforeEach(async () => {
      receiver = await TestReceiver.start();
      store = await stores.open();
    });
    afterEach(async () => {
      for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await receiver.close();
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('SIGKILLed after the 2xx and before recording it, the restarted dispatcher redelivers with the same id', async () => {
      const first = serve(stores.url(), 'after-webhook-2xx:1');
      children.push(first.child);
      const base = await first.url;
      const created = await fetch(`${base}/v1/agent-tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': 'crash-1' },
        body: JSON.stringify({ type: 'synthetic', input: { steps: 2 }, callback_url: `${receiver.url}/cb` }),
      });
      expect(created.status).toBe(202);
      const taskId = ((await created.json()) as { id: string }).id;
      // The first 2xx kills the process before the delivery is recorded.
      expect(await first.exited).toMatchObject({ signal: 'SIGKILL' });
      expect(receiver.received.length).toBeGreaterThanOrEqual(1);
      const killedOn = receiver.received[0]!.id;

      const second = serve(stores.url());
      children.push(second.child);
      await second.url;
      // Once the dead process's lease (timeout 500 ms + 5 s) lapses, the same event goes out again.
      await eventually(async () => receiver.received.filter((r) => r.id === killedOn).length >= 2, 30_000, 100);
      const deliveries = await eventually(async () => {
        const task = await store.getTask(taskId);
        if (task?.state !== 'completed') return null;
        const events = await store.listEvents(taskId, 0, 100);
        const wanted = events.filter((e) => ['started', 'completed'].includes(e.kind)).map((e) => `evt_${taskId.slice(5)}_${e.seq}`);
        const ds = await store.listDeliveries({ tenant: 'acme', limit: 100 });
        return ds.length === wanted.length && ds.every((d) => d.status === 'delivered') ? { ds, wanted } : null;
      }, 30_000, 100);
      expect(deliveries.ds.map((d) => d.eventId).sort()).toEqual(deliveries.wanted.sort());
      // Every request carried one of the task's event ids: a redelivery never invents a new one.
      expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set(deliveries.wanted));
      // The redelivered request is byte-identical to the one the dead process sent.
      const copies = receiver.received.filter((r) => r.id === killedOn);
      expect(new Set(copies.map((c) => c.body)).size).toBe(1);
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
    });
  });
}
