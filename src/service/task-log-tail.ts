/**
 * @module service/task-log-tail
 * The tail of a task's event log, shared by every stream in this process that follows the task: one store
 * subscription, one heartbeat timer per heartbeat interval, and one `listEvents` call for all streams that ask for
 * the same part of the log at the same time.
 *
 * Why: an SSE stream re-reads the log whenever it is woken. Reading per stream made one commit cost one query per
 * subscriber (1,000 queries per event through the gateway's PostgreSQL pool at 1,000 subscribers of one task). A
 * change hint wakes every follower of the task at once and they are all at the same sequence, so they ask the same
 * question; now it is asked once and the answer handed to each.
 *
 * When sharing is correct. Every hint, every heartbeat and every new follower moves the tail's `epoch` on, and a
 * read remembers the epoch at which it was issued. A hint is sent only after its commit, so a read issued at epoch
 * `e` sees every event whose hint (or the follower's opening) moved the epoch to `e` or below. A follower records
 * the epoch of the last thing that woke it (`need`; when it opened, a fresh epoch of its own) and may use only a
 * read issued at `need` or later, for the same `afterSeq` and `limit`: in flight or finished, it is the log after
 * that sequence as of a moment after the follower's wake-up, exactly what a read of its own would return at best.
 * A read issued before the wake-up is never shared with it (it may predate the commit the follower was woken
 * for). Followers behind the others (a new stream replaying from `Last-Event-ID`, a slow one) ask for a
 * different `afterSeq` and read their own backlog; so do batch-limited reads, each the next `afterSeq`. So each
 * follower receives what a private reader would: every event once, in log order.
 *
 * Failure semantics are the stream's (`protocols/http/event-log-stream.ts`): the follower is subscribed before
 * its first read; a wake-up that arrives while the follower is reading or sending is kept, and its next wait
 * returns at once; every `heartbeatMs` (of this service's clock) the tail wakes its followers with `heartbeat` and
 * they re-read, so a lost hint delays an event by at most one heartbeat. A failed shared read fails every stream
 * that awaited it (as their own reads would have) and is not reused.
 *
 * Authorisation is the caller's: a follower is made only after the caller was allowed to see the task
 * (`TaskService.openEventLog`), and a tail is keyed by task id, which is global, so a shared read only ever
 * returns that task's events to streams that were allowed them. A follower with its own reader (`read` in
 * `follow`) shares wake-ups and heartbeats but not reads.
 */
import type { Clock } from '../core/clock.js';
import type { TaskEvent } from '../core/task.js';
import type { StoreNotification } from '../store/port.js';

/** Why a wait ended: a change hint, a heartbeat while idle, or the follower was closed. */
export type FollowerWake = 'change' | 'heartbeat' | 'closed';

/** One stream's view of a task's log tail. */
export interface EventLogFollower {
  /** The log after `afterSeq` in order, at most `limit` events, as of a moment after the follower's last wake-up. */
  read(afterSeq: number, limit: number): Promise<TaskEvent[]>;
  /** Waits for the next hint or heartbeat; returns at once when one arrived since the last `read` was issued. */
  next(): Promise<FollowerWake>;
  /** Stops following (idempotent); a waiting `next()` returns `closed`. */
  close(): void;
}

export interface TaskLogTailsDeps {
  /** Reads a task's log; callers have authorised the task already. */
  read(taskId: string, afterSeq: number, limit: number): Promise<TaskEvent[]>;
  subscribe(listener: (n: StoreNotification) => void): () => void;
  clock: Clock;
}

interface SharedRead {
  readonly epoch: number;
  readonly events: Promise<TaskEvent[]>;
  done: boolean;
}

interface Heartbeat {
  readonly followers: Set<Follower>;
  readonly stop: AbortController;
}

/** Every tail of one store, by task id; a tail lives while a stream follows its task. */
export class TaskLogTails {
  private readonly tails = new Map<string, Tail>();
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly deps: TaskLogTailsDeps) {}

  /**
   * Starts following `taskId`: subscribed now, so the first read sees everything committed before this call.
   * Reads go through the shared tail unless `read` is given (a stream that authorises each read itself).
   */
  follow(taskId: string, options: { heartbeatMs: number; read?: (afterSeq: number, limit: number) => Promise<TaskEvent[]> }): EventLogFollower {
    let tail = this.tails.get(taskId);
    if (!tail) {
      tail = new Tail(taskId, this.deps, () => this.drop(taskId));
      this.tails.set(taskId, tail);
      this.unsubscribe ??= this.deps.subscribe((n) => this.hint(n));
    }
    return tail.attach(Math.max(1, options.heartbeatMs), options.read ?? null);
  }

  /** Streams following a task in this process, and how many of them wait for a wake-up (for tests and metrics). */
  followers(taskId: string): { following: number; waiting: number } {
    return this.tails.get(taskId)?.counts() ?? { following: 0, waiting: 0 };
  }

  private hint(n: StoreNotification): void {
    if (n.type === 'ready') {
      // After a reconnect: anything may have been missed.
      for (const tail of this.tails.values()) tail.wake(null, 'change');
    } else {
      this.tails.get(n.taskId)?.wake(null, 'change');
    }
  }

  private drop(taskId: string): void {
    this.tails.delete(taskId);
    if (this.tails.size === 0 && this.unsubscribe) {
      this.unsubscribe();
      this.unsubscribe = null;
    }
  }
}

class Tail {
  /** Moves on at every hint, heartbeat and new follower; see the module comment. */
  epoch = 0;
  private readonly followers = new Set<Follower>();
  private readonly heartbeats = new Map<number, Heartbeat>();
  /** Reads by `afterSeq:limit`, in flight or finished, issued at the current epoch or awaited by a follower. */
  private readonly reads = new Map<string, SharedRead>();

  constructor(
    private readonly taskId: string,
    private readonly deps: TaskLogTailsDeps,
    private readonly onEmpty: () => void,
  ) {}

  attach(heartbeatMs: number, ownRead: Follower['ownRead']): Follower {
    // A read issued before this point may predate a commit the new follower must see.
    this.epoch++;
    let beat = this.heartbeats.get(heartbeatMs);
    if (!beat) {
      beat = { followers: new Set(), stop: new AbortController() };
      this.heartbeats.set(heartbeatMs, beat);
      void this.beat(heartbeatMs, beat);
    }
    const follower = new Follower(this, beat, ownRead, this.epoch);
    this.followers.add(follower);
    beat.followers.add(follower);
    return follower;
  }

  detach(follower: Follower): void {
    this.followers.delete(follower);
    follower.heartbeat.followers.delete(follower);
    if (follower.heartbeat.followers.size === 0) {
      follower.heartbeat.stop.abort();
      for (const [ms, beat] of this.heartbeats) if (beat === follower.heartbeat) this.heartbeats.delete(ms);
    }
    if (this.followers.size === 0) this.onEmpty();
  }

  /** A hint (every follower) or a heartbeat (the followers of that interval): they must read afresh. */
  wake(only: Set<Follower> | null, why: 'change' | 'heartbeat'): void {
    this.epoch++;
    for (const [key, read] of this.reads) if (read.done) this.reads.delete(key);
    for (const f of only ?? this.followers) f.woken(this.epoch, why);
  }

  /** A read issued at `need` or later for this part of the log: shared when there is one, otherwise issued now. */
  read(afterSeq: number, limit: number, need: number): SharedRead {
    const key = `${afterSeq}:${limit}`;
    const existing = this.reads.get(key);
    if (existing && existing.epoch >= need) return existing;
    const read: SharedRead = { epoch: this.epoch, events: this.deps.read(this.taskId, afterSeq, limit), done: false };
    this.reads.set(key, read);
    const settle = (ok: boolean) => {
      read.done = true;
      // A failed read is never reused; a finished one only while no hint has come since it was issued.
      if (this.reads.get(key) === read && (!ok || read.epoch < this.epoch)) this.reads.delete(key);
    };
    void read.events.then(
      () => settle(true),
      () => settle(false),
    );
    return read;
  }

  counts(): { following: number; waiting: number } {
    let waiting = 0;
    for (const f of this.followers) if (f.waiting) waiting++;
    return { following: this.followers.size, waiting };
  }

  private async beat(heartbeatMs: number, beat: Heartbeat): Promise<void> {
    for (;;) {
      try {
        await this.deps.clock.sleep(heartbeatMs, beat.stop.signal);
      } catch {
        return; // stopped: its last follower left
      }
      if (beat.stop.signal.aborted) return;
      this.wake(beat.followers, 'heartbeat');
    }
  }
}

class Follower implements EventLogFollower {
  /** The earliest epoch at which a read may have been issued to serve this follower's next read. */
  private need: number;
  /** The epoch of the read this follower last issued or joined. */
  private seen = 0;
  private waiter: ((why: FollowerWake) => void) | null = null;
  private closed = false;

  constructor(
    private readonly tail: Tail,
    readonly heartbeat: Heartbeat,
    readonly ownRead: ((afterSeq: number, limit: number) => Promise<TaskEvent[]>) | null,
    need: number,
  ) {
    this.need = need;
  }

  get waiting(): boolean {
    return this.waiter !== null;
  }

  async read(afterSeq: number, limit: number): Promise<TaskEvent[]> {
    if (this.ownRead) {
      this.seen = this.tail.epoch;
      return this.ownRead(afterSeq, limit);
    }
    const shared = this.tail.read(afterSeq, limit, this.need);
    this.seen = Math.max(this.seen, shared.epoch);
    // Every stream gets its own array (the events themselves are shared and must not be changed).
    return (await shared.events).slice();
  }

  next(): Promise<FollowerWake> {
    if (this.closed) return Promise.resolve('closed');
    if (this.need > this.seen) return Promise.resolve('change');
    return new Promise((resolve) => (this.waiter = resolve));
  }

  woken(epoch: number, why: 'change' | 'heartbeat'): void {
    this.need = epoch;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.(why);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.tail.detach(this);
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.('closed');
  }
}
