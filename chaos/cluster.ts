/**
 * A scenario's world: a scratch database, the recording downstream, Belay gateways and workers as real processes,
 * REST clients per principal, and the history they all feed. `check()` stops everything and runs the checker.
 */
import type { Task } from '../src/core/task.js';
import { checkHistory, type CheckOptions } from './history-checker.js';
import { emptyHistory, type CreateOp, type FinalState, type History, type Violation } from './history.js';
import { openChaosDb, type ChaosDb, type PgRun, type StoreKind } from './lib/db.js';
import { ChaosDownstream } from './lib/downstream.js';
import type { Rng } from './lib/prng.js';
import { BelayProc, type ProcOptions } from './lib/procs.js';
import { ok, Rest, type Reply } from './lib/rest.js';

export type Tier = 'quick' | 'full';

export interface ScenarioContext {
  kind: StoreKind;
  tier: Tier;
  seed: number;
  rng: Rng;
  pgRun: PgRun;
  log(line: string): void;
}

/** API keys of the chaos gateways: two tenants, admins and members. */
export const PRINCIPALS = {
  ops1: { key: 'chaos-acme-ops1-0123456789', tenant: 'acme', principal: 'ops1', role: 'admin' },
  ops2: { key: 'chaos-acme-ops2-0123456789', tenant: 'acme', principal: 'ops2', role: 'admin' },
  ops3: { key: 'chaos-acme-ops3-0123456789', tenant: 'acme', principal: 'ops3', role: 'admin' },
  ops4: { key: 'chaos-acme-ops4-0123456789', tenant: 'acme', principal: 'ops4', role: 'admin' },
  alice: { key: 'chaos-acme-alice-012345678', tenant: 'acme', principal: 'alice', role: 'member' },
  bob: { key: 'chaos-acme-bob-0123456789a', tenant: 'acme', principal: 'bob', role: 'member' },
  gops: { key: 'chaos-globex-ops-01234567', tenant: 'globex', principal: 'gops', role: 'admin' },
  mallory: { key: 'chaos-globex-mallory-0123', tenant: 'globex', principal: 'mallory', role: 'member' },
} as const;
export type PrincipalName = keyof typeof PRINCIPALS;
const KEY_SPECS = Object.values(PRINCIPALS).map((p) => `${p.key}=${p.tenant}:${p.principal}:${p.role}`);

export interface ClusterOptions {
  leaseMs?: number;
  pollMs?: number;
}

export interface KillRecord {
  workerId: string;
  at: number;
}

export class Cluster {
  readonly history: History = emptyHistory();
  readonly procs: BelayProc[] = [];
  readonly downstream = new ChaosDownstream();
  readonly leaseMs: number;
  readonly pollMs: number;
  /** Extra violations a scenario finds itself (response shapes, timings). */
  readonly violations: Violation[] = [];
  /** Successful operations: acknowledged creates, answers, cancellations, SSE connections, checks that passed. */
  ops = 0;
  private keyCounter = 0;

  private constructor(
    readonly ctx: ScenarioContext,
    readonly db: ChaosDb,
    options: ClusterOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 1000;
    this.pollMs = options.pollMs ?? 50;
  }

  static async start(ctx: ScenarioContext, name: string, options: ClusterOptions = {}): Promise<Cluster> {
    const db = await openChaosDb(ctx.kind, name, ctx.pgRun);
    const c = new Cluster(ctx, db, options);
    await c.downstream.start();
    return c;
  }

  private async spawn(kind: 'worker' | 'gateway', o: Partial<ProcOptions>): Promise<BelayProc> {
    const p = new BelayProc(kind, {
      db: this.db.url,
      leaseMs: this.leaseMs,
      pollMs: this.pollMs,
      downstreamUrl: this.downstream.url,
      ...(kind === 'gateway' ? { apiKeys: KEY_SPECS } : {}),
      ...o,
    });
    this.procs.push(p);
    await p.ready;
    return p;
  }

  spawnWorker(o: Partial<ProcOptions> = {}): Promise<BelayProc> {
    return this.spawn('worker', o);
  }

  spawnGateway(o: Partial<ProcOptions> = {}): Promise<BelayProc> {
    return this.spawn('gateway', o);
  }

  liveWorkers(): BelayProc[] {
    return this.procs.filter((p) => p.kind === 'worker' && p.alive && p.readyValue !== null);
  }

  liveGateways(): string[] {
    return this.procs.filter((p) => p.kind === 'gateway' && p.alive && p.readyValue !== null).map((p) => p.readyValue!);
  }

  rest(who: PrincipalName, gateways?: () => string[]): Rest {
    return new Rest(gateways ?? (() => this.liveGateways()), PRINCIPALS[who].key, PRINCIPALS[who].tenant, (xs) => this.ctx.rng.pick(xs));
  }

  newKey(prefix = 'k'): string {
    return `${prefix}-${this.ctx.seed}-${++this.keyCounter}`;
  }

  /**
   * A logical create, retried with the same Idempotency-Key on network errors, 5xx and 409 in-flight until it is
   * answered or `deadline` passes. Returns the acknowledged task id, or null.
   */
  async create(
    client: Rest,
    type: string,
    input: Record<string, unknown>,
    o: { key?: string; plannedEffects?: string[]; deadlineMs?: number; base?: () => string } = {},
  ): Promise<{ taskId: string | null; op: CreateOp; last: Reply }> {
    const key = o.key ?? this.newKey();
    const op: CreateOp = { tenant: client.tenant, type, key, contextId: `ctx-${key}`, attempts: [], ...(o.plannedEffects ? { plannedEffects: o.plannedEffects } : {}) };
    this.history.creates.push(op);
    const end = Date.now() + (o.deadlineMs ?? 30_000);
    let last: Reply;
    for (let i = 0; ; i++) {
      last = await client.call('POST', '/v1/agent-tasks', {
        body: { type, input, context_id: op.contextId },
        headers: { 'idempotency-key': key },
        ...(o.base ? { base: o.base() } : {}),
      });
      const at = Date.now();
      if (ok(last)) {
        op.attempts.push({ at, status: last.status, taskId: last.body.id as string, replayed: last.headers?.get('idempotency-replayed') === 'true' });
        this.ops += 1;
        return { taskId: last.body.id as string, op, last };
      }
      op.attempts.push({ at, status: last.status, ...(last.body?.code ? { code: String(last.body.code) } : {}) });
      const retryable = last.status === 'network' || (typeof last.status === 'number' && (last.status >= 500 || last.status === 409));
      if (!retryable || Date.now() > end) return { taskId: null, op, last };
      await new Promise((r) => setTimeout(r, Math.min(500, 20 * 2 ** Math.min(i, 5))));
    }
  }

  async cancel(client: Rest, taskId: string, base?: string): Promise<Reply> {
    const r = await client.call('POST', `/v1/agent-tasks/${taskId}/cancellation`, base ? { base } : {});
    this.history.cancels.push({ taskId, at: Date.now(), status: r.status, ...(ok(r) ? { outcome: String(r.body.cancellation) } : {}) });
    if (ok(r)) this.ops += 1;
    return r;
  }

  async answer(client: Rest, taskId: string, version: number, answer: unknown, base?: string): Promise<Reply> {
    const r = await client.call('POST', `/v1/agent-tasks/${taskId}/input`, { body: { answer, version }, ...(base ? { base } : {}) });
    this.history.inputs.push({ taskId, at: Date.now(), version, status: r.status, ...(r.body?.code ? { code: String(r.body.code) } : {}) });
    if (ok(r)) this.ops += 1;
    return r;
  }

  /** The acknowledged task ids so far. */
  ackedTasks(): string[] {
    const ids = new Set<string>();
    for (const op of this.history.creates) for (const a of op.attempts) if (a.taskId) ids.add(a.taskId);
    return [...ids];
  }

  /**
   * Waits until every acknowledged task is terminal (answering questions of the synthetic type through REST when
   * `answer` is given). Returns false on timeout.
   */
  async settle(timeoutMs: number, answer?: Rest): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    const ids = this.ackedTasks();
    for (;;) {
      let open = 0;
      for (const id of ids) {
        const t = await this.db.store.getTask(id).catch(() => null);
        if (!t) continue;
        if (['completed', 'failed', 'canceled', 'rejected'].includes(t.state)) continue;
        open += 1;
        if (answer && t.state === 'input_required') await this.answer(answer, t.id, t.version, { ok: true });
      }
      if (open === 0) return true;
      if (Date.now() > end) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.procs.filter((p) => p.alive).map((p) => p.kill()));
  }

  /** Stops every process, then checks the history against the store. Unexpected process deaths are violations. */
  async check(options: CheckOptions = {}): Promise<{ violations: Violation[]; final: FinalState }> {
    await this.stopAll();
    this.history.receipts.push(...this.downstream.receipts.splice(0));
    const final = await this.db.final();
    const violations = [...this.violations, ...checkHistory(this.history, final, options)];
    for (const p of this.procs) {
      if (p.crashed) violations.push({ invariant: 'CRASH', detail: `${p.kind} pid ${p.pid} died on its own (${p.exit?.code ?? p.exit?.signal}): ${p.stderr().slice(-600)}` });
    }
    return { violations, final };
  }

  async close(): Promise<void> {
    await this.stopAll();
    await this.downstream.close();
    await this.db.close();
  }
}

/** Planned effect keys of a synthetic task: `s<step>-e<n>`. */
export function syntheticEffects(steps: number, effectsPerStep: number): string[] {
  const keys: string[] = [];
  for (let s = 0; s < steps; s++) for (let n = 0; n < effectsPerStep; n++) keys.push(`s${s}-e${n}`);
  return keys;
}

/**
 * Recovery times after worker kills, from the fence log: for each task the victim held at its death, the time until
 * the next grant (another worker's claim). A task the victim had already released (paused, retrying, finished) is
 * not counted.
 */
export function recoveryTimes(kills: readonly KillRecord[], final: FinalState, workers: readonly BelayProc[] = []): number[] {
  const out: number[] = [];
  // Recovery starts when the kill happened AND another worker was up to take over (process start-up is not Belay's
  // recovery time): the first moment at or after the kill when some other worker was ready and alive.
  const availableFrom = (kill: KillRecord): number => {
    let best = Infinity;
    for (const w of workers) {
      if (w.kind !== 'worker' || w.readyValue === kill.workerId || w.readyAt === null) continue;
      const from = Math.max(kill.at, w.readyAt);
      if (w.exitAt !== null && w.exitAt <= from) continue;
      best = Math.min(best, from);
    }
    return best === Infinity ? kill.at : best;
  };
  const byTask = new Map<string, NonNullable<FinalState['fenceLog']>>();
  for (const g of final.fenceLog ?? []) byTask.set(g.taskId, [...(byTask.get(g.taskId) ?? []), g]);
  for (const kill of kills) {
    for (const [taskId, grants] of byTask) {
      const sorted = [...grants].sort((a, b) => a.fence - b.fence);
      const held = [...sorted].reverse().find((g) => g.dbTime <= kill.at);
      if (!held || held.owner !== kill.workerId) continue;
      const next = sorted.find((g) => g.fence > held.fence);
      if (!next || next.owner === null) continue;
      const events = final.events.get(taskId) ?? [];
      const released = events.some((e) => e.seq >= held.nextSeq && e.seq < next.nextSeq && ['input_required', 'retry_scheduled', 'completed', 'failed', 'canceled'].includes(e.kind));
      if (released) continue;
      out.push(Math.max(0, next.dbTime - availableFrom(kill)));
      if (process.env.CHAOS_DEBUG && next.dbTime - availableFrom(kill) > 3000) {
        console.log(JSON.stringify({ taskId, kill, avail: availableFrom(kill), held, next, events: events.map((e) => [e.seq, e.kind, e.at]) }));
      }
    }
  }
  return out;
}

export function isSynthetic(t: Task): boolean {
  return t.type === 'synthetic';
}

/** How much the fence check covered: worker commits checked against grants. */
export function fenceNote(final: FinalState): string {
  let commits = 0;
  for (const events of final.events.values()) commits += events.filter((e) => typeof e.body.fence === 'number').length;
  return `${commits} worker commits fence-checked against ${final.fenceLog?.length ?? 0} lease grants`;
}
