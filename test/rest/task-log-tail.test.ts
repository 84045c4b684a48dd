/**
 * The shared task log tail behind SSE streams (`service/task-log-tail.ts` driven by
 * `protocols/http/event-log-stream.ts`), against an in-memory log whose reads take their snapshot when issued (as
 * a database statement does) and answer when the test lets them. No real time: heartbeats run on a FakeClock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../src/core/task.js';
import { eventLogStreamResponse, type EventLogFollower } from '../../src/protocols/http/event-log-stream.js';
import { TaskLogTails } from '../../src/service/task-log-tail.js';
import type { StoreNotification } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { prng } from '../helpers/prng.js';

const TASK = 'tsk_tail';
const HEARTBEAT = 1000;

/** One task's log. `hold` makes reads wait for `release`; the snapshot is taken when the read is issued. */
class FakeLog {
  readonly events: TaskEvent[] = [];
  readonly listeners = new Set<(n: StoreNotification) => void>();
  reads = 0;
  hold = false;
  failNext = false;
  readonly pending: Array<() => void> = [];

  read = (taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]> => {
    expect(taskId).toBe(TASK);
    this.reads++;
    if (this.failNext) {
      this.failNext = false;
      return Promise.reject(new Error('connection terminated'));
    }
    const snapshot = this.events.filter((e) => e.seq > afterSeq).slice(0, limit);
    if (!this.hold) return Promise.resolve(snapshot);
    return new Promise((resolve) => this.pending.push(() => resolve(snapshot)));
  };

  subscribe = (listener: (n: StoreNotification) => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Commits one event; its hint is sent unless `hint` is false (a lost notification). */
  commit(hint = true): number {
    const seq = this.events.length + 1;
    this.events.push({ taskId: TASK, seq, kind: 'progress', body: { state: 'working' }, at: seq });
    if (hint) for (const l of this.listeners) l({ type: 'event', taskId: TASK, seq, kind: 'progress' });
    return seq;
  }

  /** Answers the held reads, oldest first (or the one at `index`). */
  release(index?: number): void {
    if (index === undefined) for (const r of this.pending.splice(0)) r();
    else this.pending.splice(index, 1)[0]?.();
  }
}

/** An SSE stream as the fronts build it, and what its client saw. */
interface Client {
  readonly ids: number[];
  pings: number;
  errors: number;
  ended: boolean;
  close(): Promise<void>;
}

function openStream(follow: () => EventLogFollower, afterSeq: number, batch: number): Client {
  const ctrl = new AbortController();
  const res = eventLogStreamResponse(
    follow,
    afterSeq,
    { batch, signal: ctrl.signal, headers: {} },
    {
      onEvents: (events, sink) => {
        for (const e of events) sink.send(`id: ${e.seq}\n\n`);
      },
      onError: () => client.errors++,
    },
  );
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const client: Client = {
    ids: [],
    pings: 0,
    errors: 0,
    ended: false,
    close: async () => {
      ctrl.abort();
      await settle();
    },
  };
  void (async () => {
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      for (let k = buf.indexOf('\n\n'); k >= 0; k = buf.indexOf('\n\n')) {
        const frame = buf.slice(0, k);
        buf = buf.slice(k + 2);
        const id = /^id: (\d+)$/m.exec(frame);
        if (id) client.ids.push(Number(id[1]));
        else if (frame === ': ping') client.pings++;
      }
    }
    client.ended = true;
  })();
  return client;
}

/** Lets every stream run until it waits again (no I/O here, so a few turns of the event loop are enough). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

describe('task log tail: one read per wake-up for every stream of a task', () => {
  let log: FakeLog;
  let clock: FakeClock;
  let tails: TaskLogTails;
  const clients: Client[] = [];
  const follow = (heartbeatMs = HEARTBEAT) => () => tails.follow(TASK, { heartbeatMs });

  function setup(): void {
    log = new FakeLog();
    clock = new FakeClock();
    tails = new TaskLogTails({ read: log.read, subscribe: log.subscribe, clock });
  }

  function stream(afterSeq: number, batch = 500, heartbeatMs = HEARTBEAT): Client {
    const c = openStream(follow(heartbeatMs), afterSeq, batch);
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
  });

  it('50 streams at the same sequence share one read per committed event, and each gets every event once in order', async () => {
    setup();
    for (let i = 0; i < 3; i++) log.commit();
    const streams = Array.from({ length: 50 }, () => stream(3));
    await settle();
    expect(tails.followers(TASK)).toEqual({ following: 50, waiting: 50 });
    const before = log.reads;
    for (let i = 0; i < 20; i++) {
      log.commit();
      await settle();
    }
    expect(log.reads - before).toBe(20);
    for (const s of streams) expect(s.ids).toEqual(range(4, 23));
    expect(tails.followers(TASK)).toEqual({ following: 50, waiting: 50 });
  });

  it('a stream opened after a shared read was issued, or woken after it, never gets that older answer', async () => {
    setup();
    const a = stream(0);
    const b = stream(0);
    await settle();
    log.hold = true;
    log.commit(); // e1: a and b issue one read, held with the snapshot [e1]
    await settle();
    expect(log.pending).toHaveLength(1);
    log.commit(); // e2 arrives while that read is in flight: a and b keep the wake-up
    const c = stream(0); // opened after e2: must see it although a read "after 0" is in flight
    await settle();
    expect(log.pending).toHaveLength(2);
    log.hold = false;
    log.release();
    await settle();
    // Everyone has e2 without a heartbeat (the clock never moved).
    for (const s of [a, b, c]) expect(s).toMatchObject({ ids: [1, 2], pings: 0 });
  });

  it('a commit whose hint was lost arrives at the next heartbeat, read once for every stream, with a ping', async () => {
    setup();
    const streams = Array.from({ length: 10 }, () => stream(0));
    await settle();
    log.commit(false);
    await settle();
    for (const s of streams) expect(s.ids).toEqual([]);
    const before = log.reads;
    clock.advance(HEARTBEAT);
    await settle();
    expect(log.reads - before).toBe(1);
    for (const s of streams) expect(s).toMatchObject({ ids: [1], pings: 1 });
  });

  it('streams behind the others read their own backlog, a burst beyond the batch comes in batches, nothing twice', async () => {
    setup();
    for (let i = 0; i < 10; i++) log.commit();
    const fromStart = [stream(0, 3), stream(0, 3)];
    const fromFive = [stream(5, 3), stream(5, 3)];
    const live = [stream(10, 3), stream(10, 3)];
    for (let i = 0; i < 8; i++) log.commit(); // a burst, all hints before any stream runs
    await settle();
    for (const s of fromStart) expect(s.ids).toEqual(range(1, 18));
    for (const s of fromFive) expect(s.ids).toEqual(range(6, 18));
    for (const s of live) expect(s.ids).toEqual(range(11, 18));
    log.commit();
    await settle();
    for (const s of [...fromStart, ...fromFive, ...live]) expect(s.ids.at(-1)).toBe(19);
  });

  it('a failed shared read ends every stream that awaited it, and the next stream reads afresh', async () => {
    setup();
    const streams = [stream(0), stream(0), stream(0)];
    await settle();
    log.failNext = true;
    log.commit();
    await settle();
    for (const s of streams) expect(s).toMatchObject({ errors: 1, ended: true });
    expect(tails.followers(TASK)).toEqual({ following: 0, waiting: 0 });
    const again = stream(0);
    await settle();
    expect(again.ids).toEqual([1]);
  });

  it('the last stream to leave ends the store subscription and the heartbeat timer', async () => {
    setup();
    const s1 = stream(0);
    const s2 = stream(0, 500, 250); // another heartbeat interval: its own timer
    await settle();
    expect(log.listeners.size).toBe(1);
    expect(clock.pendingSleeps).toBe(2);
    clock.advance(250);
    await settle();
    expect([s1.pings, s2.pings]).toEqual([0, 1]);
    await s2.close();
    expect(clock.pendingSleeps).toBe(1);
    await s1.close();
    expect(log.listeners.size).toBe(0);
    expect(clock.pendingSleeps).toBe(0);
    expect(tails.followers(TASK)).toEqual({ following: 0, waiting: 0 });
  });

  it('random commits, lost hints, slow reads answered out of order, joins and leaves: every stream gets each event once, in order', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
      setup();
      const random = prng(seed);
      const open: Array<{ client: Client; from: number }> = [];
      log.hold = true;
      for (let step = 0; step < 300; step++) {
        const r = random();
        if (r < 0.35) log.commit(random() < 0.8);
        else if (r < 0.45) {
          const from = Math.floor(random() * (log.events.length + 1));
          open.push({ client: stream(from, 1 + Math.floor(random() * 4)), from });
        }
        else if (r < 0.75 && log.pending.length > 0) log.release(Math.floor(random() * log.pending.length));
        else if (r < 0.8) clock.advance(HEARTBEAT);
        else if (r < 0.83 && open.length > 1) await open.splice(Math.floor(random() * open.length), 1)[0]!.client.close();
        await new Promise((resolve) => setImmediate(resolve));
      }
      log.hold = false;
      log.release();
      clock.advance(HEARTBEAT);
      await settle();
      const last = log.events.length;
      expect(open.length).toBeGreaterThan(5);
      // Each stream got exactly the events after its Last-Event-ID, up to the last commit.
      for (const { client, from } of open) expect(client.ids, `seed ${seed}`).toEqual(range(from + 1, last));
      for (const c of clients.splice(0)) await c.close();
    }
  });
});
