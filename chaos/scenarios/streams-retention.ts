/**
 * S14: SSE clients drop their connections at random points (after some events, after some time) and resume with
 * Last-Event-ID on any gateway, while a gateway is killed; each client must receive every event of its task exactly
 * once, in order. Bogus cursors are refused (400), another tenant's task is a 404.
 * S18: retention sweeps (expiry into tombstones) run during activity; expired tasks answer 410, never come back,
 * a stale worker cannot write into a tombstoned task, and an expired idempotency key starts a new task.
 */
import { Cluster, isSynthetic, PRINCIPALS, syntheticEffects, type ScenarioContext } from '../cluster.js';
import type { CreateOp, SseChain } from '../history.js';
import { rawCall } from '../lib/fronts.js';
import { ok } from '../lib/rest.js';
import { sseFollow } from '../lib/sse.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';
import { background } from './infra-faults.js';

export const s14SseResume: Scenario = {
  id: 'S14',
  title: 'SSE reconnects with Last-Event-ID',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const tasks = sized(ctx.tier, 10, 150);
    const c = await Cluster.start(ctx, 'S14', { leaseMs: 1000 });
    try {
      await Promise.all([c.spawnGateway(), c.spawnGateway()]);
      await Promise.all([c.spawnWorker({ concurrency: 8 }), c.spawnWorker({ concurrency: 8 })]);
      const api = c.rest('ops1');
      const key = PRINCIPALS.ops1.key;
      let stop = false;
      const answerer = (async () => {
        const who = c.rest('ops2');
        while (!stop) {
          const waiting = await c.db.store.listTasks({ tenant: 'acme', states: ['input_required'], limit: 50 }).catch(() => []);
          for (const t of waiting) await c.answer(who, t.id, t.version, { ok: true });
          await sleep(100);
        }
      })();
      const followers: Array<Promise<SseChain>> = [];
      const deadline = Date.now() + 90_000;
      for (let i = 0; i < tasks; i++) {
        const rng = ctx.rng.fork();
        const steps = rng.int(3, 6);
        const input: Record<string, unknown> = { steps, stepMs: rng.int(40, 150), effectsPerStep: 1, effectUrl: c.downstream.effectUrl };
        if (rng.chance(0.3)) input.askAtStep = rng.int(0, steps - 1);
        const { taskId } = await c.create(api, 'synthetic', input, { plannedEffects: syntheticEffects(steps, 1) });
        if (!taskId) continue;
        followers.push(
          sseFollow(
            () => c.liveGateways(),
            key,
            taskId,
            () => (rng.chance(0.15) ? { afterEvents: null, afterMs: null } : rng.chance(0.5) ? { afterEvents: rng.int(1, 3), afterMs: null } : { afterEvents: null, afterMs: rng.int(30, 500) }),
            (xs) => rng.pick(xs),
            deadline,
          ),
        );
        await sleep(rng.int(0, 150));
      }
      // A gateway dies under its streams and comes back.
      for (let k = 0; k < sized(ctx.tier, 1, 10); k++) {
        await sleep(ctx.rng.int(200, 1500));
        const gws = c.procs.filter((p) => p.kind === 'gateway' && p.alive);
        if (gws.length > 1) {
          ctx.rng.pick(gws).signal('SIGKILL');
          await c.spawnGateway();
        }
      }
      const chains = await Promise.all(followers);
      c.history.sse.push(...chains);
      stop = true;
      await answerer;
      let connections = 0;
      let events = 0;
      for (const ch of chains) {
        connections += ch.connections.length;
        for (const conn of ch.connections) events += conn.events.length;
        if (ch.connections.at(-1)?.end !== 'terminal') c.violations.push({ invariant: 'SSE', detail: `a follower never reached the terminal event (${ch.connections.length} connections, last ${ch.connections.at(-1)?.end ?? 'none'} ${String(ch.connections.at(-1)?.status)})`, taskId: ch.taskId });
        else c.ops += 1;
      }
      // Bogus cursors, another tenant, a missing task.
      const some = chains[0]?.taskId;
      const base = c.liveGateways()[0]!;
      if (some) {
        for (const [what, headers, expected, who] of [
          ['a non-numeric Last-Event-ID', { 'last-event-id': 'abc' }, [400, 422], 'ops1'],
          ['a negative Last-Event-ID', { 'last-event-id': '-1' }, [400, 422], 'ops1'],
          ["another tenant's task", {}, [404], 'gops'],
        ] as const) {
          const r = await rawCall(`${base}/v1/agent-tasks/${some}/events`, { key: PRINCIPALS[who].key, method: 'GET', headers: { accept: 'text/event-stream', ...headers }, timeoutMs: 5000 });
          if (!(expected as readonly unknown[]).includes(r.status)) c.violations.push({ invariant: 'SSE', detail: `SSE with ${what} answered ${String(r.status)} (expected ${expected.join(' or ')})`, taskId: some });
          else c.ops += 1;
        }
      }
      const settled = await c.settle(60_000, c.rest('ops3'));
      const { violations } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      return {
        ops: c.ops,
        minOps: tasks,
        violations,
        recovery: [],
        notes: [`${chains.length} followers, ${connections} connections (${connections - chains.length} drops and resumes), ${events} events received`],
      };
    } finally {
      await c.close();
    }
  },
};

export const s18Retention: Scenario = {
  id: 'S18',
  title: 'retention sweeps during activity',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const seconds = sized(ctx.tier, 4, 120);
    const c = await Cluster.start(ctx, 'S18', { leaseMs: 1000 });
    const fail = (detail: string, taskId?: string) => c.violations.push({ invariant: 'S18', detail, ...(taskId ? { taskId } : {}) });
    try {
      await c.spawnGateway();
      const workers = await Promise.all([c.spawnWorker({ concurrency: 8 }), c.spawnWorker({ concurrency: 8 })]);
      let stop = false;
      const load = background(c, ctx.rng.fork(), 6, () => stop, { maxSteps: 3, ask: 0.1, stepMs: [20, 100] });
      // The sweep runs as if 40 days had passed: every finished task is past its retention at once.
      let expired = 0;
      const sweeper = (async () => {
        while (!stop) {
          expired += await c.db.store.expireTasks(Date.now() + 40 * 24 * 3600_000, 20).catch(() => 0);
          await sleep(150);
        }
      })();
      const gone = new Set<string>();
      // SQLite: a worker frozen inside its write transaction holds the file's write lock; every process's writes then
      // wait out the busy timeout on their event loop (better-sqlite3 is synchronous), so a gateway stops answering
      // for a while. A documented single-writer limit: counted as a finding inside a freeze window, not a violation.
      const freezes: Array<{ from: number; to: number }> = [];
      let stalls = 0;
      const inFreeze = (at: number) => freezes.some((f) => at >= f.from && at <= f.to + 20_000);
      const reader = (async () => {
        const api = c.rest('ops2');
        while (!stop) {
          const ids = c.ackedTasks();
          if (ids.length) {
            const id = ctx.rng.pick(ids);
            // Short: on SQLite a frozen writer stalls the gateway (see below); a stall must not eat the run's time.
            const r = await api.call('GET', `/v1/agent-tasks/${id}`, { timeoutMs: 3000 });
            if (r.status === 410) gone.add(id);
            else if (r.status === 200 && gone.has(id)) fail('a task answered 200 after it had answered 410 Gone (resurrected)', id);
            else if (r.status === 'network' && ctx.kind === 'sqlite' && inFreeze(Date.now())) stalls += 1;
            else if (r.status !== 200) fail(`reading a task during sweeps answered ${String(r.status)}: ${r.error ?? r.text.slice(0, 200)} (at ${new Date().toISOString()})`, id);
            if (r.status === 200 || r.status === 410) c.ops += 1;
          }
          await sleep(30);
        }
      })();
      // A stale worker on a task that gets cancelled, finished by another worker and expired while it sleeps.
      let staleRounds = 0;
      for (let r = 0; r < sized(ctx.tier, 2, 20); r++) {
        await sleep(1000);
        const victim = ctx.rng.pick(workers.filter((w) => w.alive));
        const held = (await c.db.store.listTasks({ tenant: 'acme', states: ['working'], limit: 100 })).filter((t) => t.leaseOwner === victim.readyValue && (t.leaseUntil ?? 0) > Date.now());
        if (!held.length) continue;
        victim.signal('SIGSTOP');
        const freeze = { from: Date.now(), to: Infinity };
        freezes.push(freeze);
        if (process.env.CHAOS_DEBUG) console.log(`SIGSTOP ${victim.readyValue} at ${new Date().toISOString()}`);
        for (const t of held) await c.cancel(c.rest('ops3'), t.id);
        const end = Date.now() + 8000;
        while (Date.now() < end && !(await Promise.all(held.map((t) => c.db.store.getTombstone(t.id)))).every(Boolean)) await sleep(100);
        victim.signal('SIGCONT');
        freeze.to = Date.now();
        if (process.env.CHAOS_DEBUG) console.log(`SIGCONT ${victim.readyValue} at ${new Date().toISOString()}`);
        staleRounds += 1;
        await sleep(500);
      }
      await sleep(seconds * 1000);
      stop = true;
      await Promise.all([load, sweeper, reader]);
      // An expired key is a new request: the same key and body start a new task (the key died with its task).
      let reused = 0;
      for (const op of c.history.creates.slice(0, 40)) {
        const old = op.attempts.find((a) => a.taskId)?.taskId;
        if (!old || !(await c.db.store.getTombstone(old))) continue;
        const again: CreateOp = { tenant: op.tenant, type: op.type, key: op.key, contextId: op.contextId, attempts: [] };
        c.history.creates.push(again);
        const r = await c.rest('ops1').call('POST', '/v1/agent-tasks', { body: { type: op.type, input: {}, context_id: op.contextId }, headers: { 'idempotency-key': op.key } });
        if (ok(r)) again.attempts.push({ at: Date.now(), status: r.status, taskId: String(r.body.id), replayed: r.headers?.get('idempotency-replayed') === 'true' });
        // The body differs from the original (input {}), so a live key would answer 422; an expired one creates.
        if (!ok(r) || r.body.id === old || r.headers?.get('idempotency-replayed') === 'true') fail(`reusing the key of expired task ${old} answered ${String(r.status)} ${r.text.slice(0, 160)}`, old);
        else c.ops += 1;
        if (++reused >= 3) break;
      }
      await c.settle(30_000, c.rest('ops3'));
      const { violations, final } = await c.check({ settled: 'terminal', mustComplete: (t) => isSynthetic(t) && t.cancelRequestedAt === null });
      // No resurrection: nothing of a tombstoned task is left or written back.
      for (const id of final.tombstones.keys()) {
        if (final.tasks.has(id)) fail('a tombstoned task has a row again', id);
        const events = await c.db.store.listEvents(id, 0, 10);
        const effects = await c.db.store.listEffects(id);
        if (events.length || effects.length) fail(`a tombstoned task has ${events.length} events and ${effects.length} ledger rows`, id);
      }
      for (const id of gone) if (final.tasks.has(id)) fail('a task that answered 410 exists again', id);
      return {
        ops: c.ops,
        minOps: sized(ctx.tier, 30, 500),
        violations,
        recovery: [],
        notes: [
          `${expired} tasks expired into tombstones during activity, ${gone.size} read back as 410, ${staleRounds} stale workers woken after their task expired, ${reused} expired idempotency keys reused`,
          ...(stalls ? [`finding: ${stalls} reads timed out while a frozen worker held SQLite's write lock (the gateway's own writes block its event loop for the busy timeout)`] : []),
        ],
      };
    } finally {
      await c.close();
    }
  },
};
