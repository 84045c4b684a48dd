/**
 * Faults below Belay: S4 PostgreSQL restarts (fast and immediate) under load; S5 half-open and partitioned
 * connections between workers and PostgreSQL through an in-process TCP proxy; S6 a stale writer (SIGSTOP past its
 * lease, SIGCONT after another worker re-claimed its tasks). Every scenario keeps load running and ends with the
 * history check: no lost acknowledged task, effects once, no commit with an old fence, processes still alive.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { Cluster, fenceNote, isSynthetic, recoveryTimes, type KillRecord, type ScenarioContext } from '../cluster.js';
import type { Violation } from '../history.js';
import type { Rng } from '../lib/prng.js';
import type { BelayProc } from '../lib/procs.js';
import { TcpProxy } from '../lib/tcp-proxy.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';
import { randomSynthetic } from './worker-kills.js';

const run = promisify(execFile);

/** Keeps `target` synthetic tasks open and answers their questions until `stop()`. */
export function background(c: Cluster, rng: Rng, target: number, stop: () => boolean, shape: { maxSteps?: number; ask?: number; stepMs?: [number, number] } = {}): Promise<void> {
  const creator = c.rest('ops1');
  const answerer = c.rest('ops2');
  const feed = async () => {
    while (!stop()) {
      const open = await c.db.store.listTasks({ tenant: 'acme', states: ['submitted', 'working', 'input_required'], limit: target }).catch(() => null);
      if (open) {
        for (let i = open.length; i < target && !stop(); i++) {
          const { input, plannedEffects } = randomSynthetic(rng, c.downstream.effectUrl, shape);
          if (shape.stepMs) input.stepMs = rng.int(shape.stepMs[0], shape.stepMs[1]);
          await c.create(creator, 'synthetic', input, { plannedEffects, deadlineMs: 60_000 });
        }
      }
      await sleep(100);
    }
  };
  const answer = async () => {
    while (!stop()) {
      const waiting = await c.db.store.listTasks({ tenant: 'acme', states: ['input_required'], limit: 50 }).catch(() => []);
      for (const t of waiting) await c.answer(answerer, t.id, t.version, { ok: true });
      await sleep(100);
    }
  };
  return Promise.all([feed(), answer()]).then(() => undefined);
}

/** The tasks a worker holds right now (by the store). */
async function heldBy(c: Cluster, workerId: string): Promise<string[]> {
  const working = await c.db.store.listTasks({ tenant: 'acme', states: ['working'], limit: 100 }).catch(() => []);
  const now = Date.now();
  return working.filter((t) => t.leaseOwner === workerId && (t.leaseUntil ?? 0) > now).map((t) => t.id);
}

/** Waits for a worker (among `candidates`) that holds at least one lease. */
async function busyWorker(c: Cluster, candidates: () => BelayProc[], rng: Rng, timeoutMs = 10_000): Promise<BelayProc | null> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const busy: BelayProc[] = [];
    for (const w of candidates()) if ((await heldBy(c, w.readyValue!)).length > 0) busy.push(w);
    if (busy.length) return rng.pick(busy);
    await sleep(50);
  }
  return null;
}

function livenessBound(recovery: number[], leaseMs: number, what: string): Violation[] {
  const bound = leaseMs + 5000;
  return recovery.filter((ms) => ms > bound).map((ms) => ({ invariant: 'I6', detail: `${what}: a task was re-claimed ${ms} ms after its holder stopped (bound ${bound} ms)` }));
}

export const s6StaleWriter: Scenario = {
  id: 'S6',
  title: 'stale writer: SIGSTOP past the lease, SIGCONT',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 4, 200);
    const c = await Cluster.start(ctx, 'S6', { leaseMs: 1000 });
    try {
      await c.spawnGateway();
      const workers = await Promise.all([0, 1, 2].map(() => c.spawnWorker({ concurrency: 8, logLevel: 'info' })));

      let stop = false;
      const load = background(c, ctx.rng.fork(), 8, () => stop, { maxSteps: 6, ask: 0.1, stepMs: [60, 200] });
      const stops: KillRecord[] = [];
      let frozen = 0;
      for (let r = 0; r < rounds; r++) {
        const victim = await busyWorker(c, () => workers.filter((w) => w.alive), ctx.rng);
        if (!victim) continue;
        const held = await heldBy(c, victim.readyValue!);
        victim.signal('SIGSTOP');
        stops.push({ workerId: victim.readyValue!, at: Date.now() });
        // Until another worker holds (or finished) one of its tasks, or 5 leases passed.
        const end = Date.now() + 5 * c.leaseMs;
        while (Date.now() < end) {
          const tasks = await Promise.all(held.map((id) => c.db.store.getTask(id).catch(() => null)));
          if (tasks.some((t) => t && t.leaseOwner !== victim.readyValue)) break;
          await sleep(50);
        }
        await sleep(ctx.rng.int(0, 500));
        victim.signal('SIGCONT');
        frozen += held.length;
        await sleep(ctx.rng.int(200, 1000));
      }
      stop = true;
      await load;
      const settled = await c.settle(60_000, c.rest('ops3'));
      const leaseLost = workers.reduce((n, w) => n + w.leaseLostLogs, 0);
      const { violations, final } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      const recovery = recoveryTimes(stops, final, c.procs);
      const busy = workers.reduce((n, w) => n + w.busyLogs, 0);
      // SQLite: a worker frozen INSIDE a write transaction keeps the file's write lock, so every other process waits
      // for it (busy timeout, then back-off) — re-claim then takes as long as the freeze, not the lease. That is
      // SQLite's single-writer model, not a lease bug: the bound is enforced on PostgreSQL (row locks, one-statement
      // commits) and reported on SQLite.
      if (ctx.kind === 'postgres') violations.push(...livenessBound(recovery, c.leaseMs, 'SIGSTOP'));
      // A re-claim slower than two leases waited for the frozen process, not for the lease.
      const slow = recovery.filter((ms) => ms > 2 * c.leaseMs).length;
      return {
        ops: c.ops,
        minOps: sized(ctx.tier, 10, 300),
        violations,
        recovery,
        notes: [
          `${stops.length} SIGSTOP/SIGCONT rounds freezing ${frozen} leased tasks; the woken workers logged ${leaseLost} refused writes ("lease lost"); ${fenceNote(final)}`,
          ...(ctx.kind === 'sqlite' && (slow > 0 || busy > 0) ? [`finding: ${slow} re-claims waited for the frozen process (${busy} "database is locked" logs from the others): a frozen SQLite writer holds the write lock`] : []),
        ],
      };
    } finally {
      await c.close();
    }
  },
};

function pgVersion(): string {
  return readdirSync('/etc/postgresql').sort().at(-1) ?? '15';
}

async function pgReady(timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      await run('pg_isready', ['-h', '127.0.0.1', '-p', '5432', '-q']);
      return true;
    } catch {
      await sleep(200);
    }
  }
  return false;
}

export const s4PostgresRestart: Scenario = {
  id: 'S4',
  title: 'PostgreSQL restart mid-run (fast, immediate)',
  stores: ['postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const restarts = sized(ctx.tier, 2, 50);
    const c = await Cluster.start(ctx, 'S4', { leaseMs: 1000 });
    const recovery: number[] = [];
    const done: Array<{ mode: string; downMs: number }> = [];
    try {
      await c.spawnGateway();
      await Promise.all([c.spawnWorker({ concurrency: 8 }), c.spawnWorker({ concurrency: 8 })]);
      let stop = false;
      const load = background(c, ctx.rng.fork(), 8, () => stop, { maxSteps: 5, ask: 0.1 });
      const restartEnds: number[] = [];
      try {
        for (let r = 0; r < restarts; r++) {
          await sleep(ctx.tier === 'full' ? ctx.rng.int(5000, 15_000) : ctx.rng.int(2500, 5000));
          const mode = r % 2 === 0 ? 'fast' : 'immediate';
          const t0 = Date.now();
          try {
            await run('pg_ctlcluster', ['--skip-systemctl-redirect', pgVersion(), 'main', 'restart', '-m', mode]);
          } catch (e) {
            c.violations.push({ invariant: 'ERROR', detail: `pg_ctlcluster restart -m ${mode} failed: ${(e as Error).message}` });
          }
          if (!(await pgReady(60_000))) throw new Error('PostgreSQL did not come back within 60 s');
          restartEnds.push(Date.now());
          done.push({ mode, downMs: Date.now() - t0 });
        }
        await sleep(3000);
      } finally {
        stop = true;
        await load;
      }
      const settled = await c.settle(90_000, c.rest('ops3'));
      const { violations, final } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 90 s after the restarts' });
      // Recovery: from the server being back to the first worker commit after it.
      const commits = [...final.events.values()].flat().filter((e) => typeof e.body.fence === 'number').map((e) => e.at).sort((a, b) => a - b);
      for (const end of restartEnds) {
        const first = commits.find((at) => at >= end);
        if (first === undefined) violations.push({ invariant: 'I6', detail: `no worker committed anything after the restart at ${new Date(end).toISOString()}` });
        else {
          recovery.push(first - end);
          if (first - end > 10_000) violations.push({ invariant: 'I6', detail: `workers needed ${first - end} ms to commit again after a restart (bound 10 s)` });
        }
      }
      const unanswered = c.history.creates.filter((op) => !op.attempts.some((a) => a.taskId));
      for (const op of unanswered) violations.push({ invariant: 'S4', detail: `create ${op.key} was never acknowledged (last: ${JSON.stringify(op.attempts.at(-1))})` });
      const retried = c.history.creates.filter((op) => op.attempts.length > 1).length;
      return {
        ops: c.ops,
        minOps: sized(ctx.tier, 10, 400),
        violations,
        recovery,
        notes: [`${done.map((d) => `${d.mode} restart (${d.downMs} ms)`).join(', ')}; ${retried} creates retried across a restart; ${fenceNote(final)}`],
      };
    } finally {
      await pgReady(60_000);
      await c.close();
    }
  },
};

export const s5HalfOpen: Scenario = {
  id: 'S5',
  title: 'half-open / partitioned worker connections',
  stores: ['postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 4, 200);
    const c = await Cluster.start(ctx, 'S5', { leaseMs: 1000 });
    const proxies: TcpProxy[] = [];
    try {
      await c.spawnGateway();
      const pgInfo = c.db.pg!;
      const proxied: Array<{ worker: BelayProc; proxy: TcpProxy; healedAt: number | null }> = [];
      for (let i = 0; i < 2; i++) {
        const proxy = new TcpProxy(pgInfo.host, pgInfo.port);
        await proxy.start();
        proxies.push(proxy);
        proxied.push({ worker: await c.spawnWorker({ concurrency: 8, db: pgInfo.urlVia('127.0.0.1', proxy.port), logLevel: 'info' }), proxy, healedAt: null });
      }
      // One worker straight to the server, so work goes on while the others are cut off.
      await c.spawnWorker({ concurrency: 8 });
      let stop = false;
      const load = background(c, ctx.rng.fork(), 10, () => stop, { maxSteps: 6, ask: 0.1, stepMs: [40, 150] });
      const cuts: KillRecord[] = [];
      const modes: string[] = [];
      for (let r = 0; r < rounds; r++) {
        const victim = await busyWorker(c, () => proxied.map((p) => p.worker), ctx.rng);
        if (!victim) continue;
        const entry = proxied.find((p) => p.worker === victim)!;
        const mode = r % 2 === 0 ? 'pause' : 'blackhole';
        modes.push(mode);
        entry.proxy.setMode(mode);
        cuts.push({ workerId: victim.readyValue!, at: Date.now() });
        await sleep(ctx.rng.int(2 * c.leaseMs, 4 * c.leaseMs));
        entry.proxy.heal();
        entry.healedAt = Date.now();
        await sleep(ctx.rng.int(300, 1200));
      }
      // Keep the load on so the healed workers have work to come back to.
      await sleep(4000);
      stop = true;
      await load;
      const settled = await c.settle(60_000, c.rest('ops3'));
      const leaseLost = proxied.reduce((n, p) => n + p.worker.leaseLostLogs, 0);
      const { violations, final } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      const recovery = recoveryTimes(cuts, final, c.procs);
      violations.push(...livenessBound(recovery, c.leaseMs, 'cut connection'));
      for (const p of proxied) {
        if (p.healedAt === null) continue;
        const back = (final.fenceLog ?? []).some((g) => g.owner === p.worker.readyValue && g.dbTime > p.healedAt!);
        if (!back) violations.push({ invariant: 'I6', detail: `worker ${p.worker.readyValue} never claimed a task after its connection healed (wedged)` });
      }
      return {
        ops: c.ops,
        minOps: sized(ctx.tier, 10, 300),
        violations,
        recovery,
        notes: [`${cuts.length} cuts (${modes.join(', ')}), each 2-4 leases long; the cut-off workers logged ${leaseLost} refused writes ("lease lost"); ${fenceNote(final)}`],
      };
    } finally {
      for (const p of proxies) await p.close();
      await c.close();
    }
  },
};

