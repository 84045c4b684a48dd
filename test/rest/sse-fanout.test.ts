/**
 * SSE fan-out on one gateway (issue 8), on both stores: many event streams of ONE task share the log reads, so a
 * commit costs O(1) `listEvents` calls however many subscribers follow the task, and every stream still gets
 * every event exactly once, in order: live, replaying from `Last-Event-ID`, and across a burst larger than the
 * stream's batch (500). Events are committed through the store under a lease, as a worker commits them; no
 * worker runs. The service runs on a FakeClock, so no heartbeat fires unless a test moves it.
 */
import http from 'node:http';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../src/core/task.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Lease, Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const ALICE = 'key-alice-0123456789abcdef';
const MALLORY = 'key-mallory-0123456789abcdef';
const KEYS = [`${ALICE}=acme:alice`, `${MALLORY}=globex:mallory`];
const STREAMS = 50;
const HEARTBEAT = 5_000;

/**
 * The store with `listEvents` counted and held while `hold` is set (issued, not answered), and its hints dropped
 * while `mute` is set (a lost notification).
 */
function countingStore(store: Store) {
  const spy = { reads: 0, hold: null as Promise<void> | null, mute: false };
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'subscribe') {
        return (listener: Parameters<Store['subscribe']>[0]) => target.subscribe((n) => (spy.mute ? undefined : listener(n)));
      }
      if (prop === 'listEvents') {
        return async (taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]> => {
          spy.reads++;
          const read = target.listEvents(taskId, afterSeq, limit);
          if (spy.hold) await spy.hold;
          return read;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, spy };
}

/** One SSE client on its own connection (as browsers and the bench's subscribers are), collecting event ids. */
interface Stream {
  readonly ids: number[];
  readonly status: Promise<number>;
  close(): void;
}

function openStream(url: string, key: string, lastEventId: number): Stream {
  const ids: number[] = [];
  let req: http.ClientRequest | null = null;
  const status = new Promise<number>((resolve, reject) => {
    req = http.get(url, { agent: false, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'last-event-id': String(lastEventId) } }, (res) => {
      resolve(res.statusCode ?? 0);
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let k = buf.indexOf('\n\n'); k >= 0; k = buf.indexOf('\n\n')) {
          const id = /^id: (\d+)$/m.exec(buf.slice(0, k));
          buf = buf.slice(k + 2);
          if (id) ids.push(Number(id[1]));
        }
      });
      res.on('error', () => undefined);
    });
    req.on('error', (e) => (e.message.includes('aborted') || e.message.includes('socket hang up') ? undefined : reject(e)));
  });
  return { ids, status, close: () => req?.destroy() };
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

for (const kind of storesUnderTest()) {
  describe(`SSE fan-out on one gateway, ${kind}`, () => {
    const stores = testStores(kind);
    let raw: Store | null = null;
    let server: RunningServer | null = null;
    let service: TaskService;
    let spy: ReturnType<typeof countingStore>['spy'];
    let clock: FakeClock;
    let streams: Stream[] = [];
    let taskId: string;
    let lease: Lease;
    let lastSeq: number;

    beforeEach(async () => {
      raw = await stores.open();
      const counted = countingStore(raw);
      spy = counted.spy;
      clock = new FakeClock(Date.now());
      service = new TaskService({ store: counted.store, registry: exampleRegistry(new InMemoryDownstream()), clock });
      const app = createBelayApp({ service, auth: new Authenticator({ apiKeys: KEYS.map(parseApiKeySpec) }), rateLimit: null, heartbeatMs: HEARTBEAT });
      server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      const { task } = await service.createTask({ tenant: 'acme', principal: 'alice' }, { type: 'synthetic', input: {} });
      const [claimed] = await raw.claimTasks({ workerId: 'test', now: clock.now(), leaseMs: 3_600_000, limit: 1, kinds: [{ type: 'synthetic', version: 1 }] });
      taskId = task.id;
      lease = claimed!.lease;
      lastSeq = claimed!.task.nextSeq - 1;
    });

    afterEach(async () => {
      for (const s of streams) s.close();
      streams = [];
      await server?.close();
      await raw?.close();
      server = null;
      raw = null;
    });
    afterAll(() => stores.teardown());

    /** Commits one progress event under the lease, as a worker's `ctx.progress` does. */
    async function commit(): Promise<number> {
      const now = clock.now();
      const progress = { current: lastSeq, total: 1000, message: null };
      const out = await raw!.commit({
        lease,
        now,
        kind: 'progress',
        state: 'working',
        step: 0,
        checkpoint: { at: lastSeq },
        progress,
        pendingInput: null,
        result: null,
        artifacts: undefined,
        error: null,
        leaseUntil: now + 3_600_000,
        wakeAt: now + 3_600_000,
        resetAttempts: false,
        expiresAt: null,
        event: { kind: 'progress', body: { state: 'working', step: 0, step_name: 'run', completed_step: null, steps_total: 1, progress, substep: true } },
      });
      if (!out.ok) throw new Error(`commit refused: ${out.reason}`);
      lastSeq = out.seq;
      return out.seq;
    }

    function open(n: number, after: number, key = ALICE): Stream[] {
      const opened = Array.from({ length: n }, () => openStream(`${server!.url}/v1/agent-tasks/${taskId}/events`, key, after));
      streams.push(...opened);
      return opened;
    }

    const everyoneHas = (list: Stream[], seq: number) => eventually(async () => list.every((s) => s.ids.at(-1) === seq), 20_000, 5);

    it(`${STREAMS} streams of one task: O(1) listEvents per committed event, not O(streams); each gets every event once, in order`, async () => {
      const first = lastSeq;
      const live = open(STREAMS, first);
      for (const s of live) expect(await s.status).toBe(200);
      // Every stream has made its first read once a first event reached all of them.
      await everyoneHas(live, await commit());
      spy.reads = 0;
      const events = 20;
      for (let i = 0; i < events; i++) await everyoneHas(live, await commit());
      // One shared read per hint; a store may hint an event twice (SQLite: its own commit, then its poll).
      expect(spy.reads).toBeLessThanOrEqual(3 * events + 3);
      for (const s of live) expect(s.ids).toEqual(range(first + 1, lastSeq));
      expect(service.eventLogFollowers(taskId)).toMatchObject({ following: STREAMS });
    });

    it('commits racing the streams, a late subscriber with Last-Event-ID and a burst beyond the batch: every event once, in order', async () => {
      const first = lastSeq;
      const live = open(STREAMS, first);
      for (const s of live) expect(await s.status).toBe(200);
      await everyoneHas(live, await commit());
      // Commits back to back while the streams read.
      for (let i = 0; i < 40; i++) await commit();
      // A late subscriber from an earlier event replays what it missed, then follows with the others.
      const late = open(1, first + 3);
      await everyoneHas([...live, ...late], lastSeq);
      // A burst of 510 events while the reads are held: the shared read hits the batch limit (500) and continues.
      let release = () => {};
      spy.hold = new Promise((r) => (release = r));
      const beforeBurst = lastSeq;
      for (let i = 0; i < 510; i++) await commit();
      const fromZero = open(1, 0);
      spy.reads = 0;
      release();
      spy.hold = null;
      await everyoneHas([...live, ...late, ...fromZero], lastSeq);
      for (const s of live) expect(s.ids).toEqual(range(first + 1, lastSeq));
      expect(late[0]!.ids).toEqual(range(first + 4, lastSeq));
      expect(fromZero[0]!.ids).toEqual(range(1, lastSeq));
      // After the burst: a handful of shared reads for 51 streams, not one per stream per batch.
      expect(spy.reads).toBeLessThan(STREAMS);
      expect(lastSeq - beforeBurst).toBe(510);
    });

    it('a commit whose hint never came reaches every stream at the next heartbeat of the service clock', async () => {
      const first = lastSeq;
      const live = open(5, first);
      for (const s of live) expect(await s.status).toBe(200);
      await everyoneHas(live, await commit());
      await eventually(async () => service.eventLogFollowers(taskId).waiting === 5, 10_000, 5);
      spy.mute = true; // this gateway hears no hint of the next commit
      const seq = await commit();
      await new Promise((r) => setTimeout(r, 300));
      for (const s of live) expect(s.ids.at(-1)).toBe(seq - 1);
      clock.advance(HEARTBEAT);
      await everyoneHas(live, seq);
      for (const s of live) expect(s.ids).toEqual(range(first + 1, seq));
    });

    it("a stream of another tenant's task is refused; its tail never serves it", async () => {
      const [foreign] = open(1, 0, MALLORY);
      expect(await foreign!.status).toBe(404);
      expect(service.eventLogFollowers(taskId)).toEqual({ following: 0, waiting: 0 });
    });
  });
}
