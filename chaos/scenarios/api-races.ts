/**
 * Races at the API: S8 duplicate and concurrent creates (one key, many requests, two gateways; a different body;
 * another tenant), S9 stale and concurrent inputs, S10 cancellation racing completion, claims, inputs and itself.
 */
import { Cluster, syntheticEffects, type ScenarioContext } from '../cluster.js';
import type { CreateOp } from '../history.js';
import { ok, type Reply, type Rest } from '../lib/rest.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';

const statusOf = (r: Reply) => (typeof r.status === 'number' ? r.status : 0);

async function waitState(c: Cluster, id: string, states: readonly string[], timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const t = await c.db.store.getTask(id).catch(() => null);
    if (t && states.includes(t.state)) return t;
    await sleep(20);
  }
  return null;
}

/** Sends one create body under one key, `n` times at once, alternating gateways; records one logical create. */
async function burst(c: Cluster, client: Rest, key: string, body: Record<string, unknown>, n: number, op?: CreateOp): Promise<{ op: CreateOp; replies: Reply[] }> {
  const logical: CreateOp = op ?? { tenant: client.tenant, type: String(body.type), key, contextId: String(body.context_id), attempts: [] };
  if (!op) c.history.creates.push(logical);
  const gateways = c.liveGateways();
  const replies = await Promise.all(
    Array.from({ length: n }, (_, i) => client.call('POST', '/v1/agent-tasks', { body, headers: { 'idempotency-key': key }, base: gateways[i % gateways.length]! })),
  );
  for (const r of replies) {
    logical.attempts.push({
      at: Date.now(),
      status: r.status,
      ...(ok(r) ? { taskId: String(r.body.id), replayed: r.headers?.get('idempotency-replayed') === 'true' } : {}),
      ...(r.body?.code ? { code: String(r.body.code) } : {}),
    });
  }
  return { op: logical, replies };
}

export const s8DuplicateCreates: Scenario = {
  id: 'S8',
  title: 'duplicate and concurrent creates',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 4, 500);
    const parallel = sized(ctx.tier, 20, 50);
    const c = await Cluster.start(ctx, 'S8');
    try {
      await Promise.all([c.spawnGateway(), c.spawnGateway()]);
      await c.spawnWorker();
      const acme = c.rest('ops1');
      const globex = c.rest('gops');
      for (let r = 0; r < rounds; r++) {
        const key = c.newKey('dup');
        const steps = ctx.rng.int(1, 3);
        const body = { type: 'synthetic', input: { steps, stepMs: 5, effectsPerStep: 1, effectUrl: c.downstream.effectUrl }, context_id: `ctx-${key}` };
        // 1. The same request, many times at once, through two gateways.
        const { op, replies } = await burst(c, acme, key, body, parallel);
        op.plannedEffects = syntheticEffects(steps, 1);
        const bad = replies.filter((x) => !ok(x) && !(x.status === 409 && x.body?.code === 'idempotency_in_flight'));
        for (const x of bad) c.violations.push({ invariant: 'S8', detail: `a duplicate create answered ${statusOf(x)} ${x.text.slice(0, 200)}` });
        const created = replies.filter((x) => ok(x) && x.headers?.get('idempotency-replayed') !== 'true');
        if (created.length !== 1) c.violations.push({ invariant: 'S8', detail: `${parallel} identical creates: ${created.length} answered "created" (expected 1)` });
        else c.ops += 1;
        const id = replies.find(ok)?.body.id as string | undefined;
        // 2. The same key with a different body: 422, nothing created.
        const other = await acme.call('POST', '/v1/agent-tasks', { body: { ...body, input: { ...body.input, steps: steps + 1 } }, headers: { 'idempotency-key': key } });
        if (other.status !== 422 || other.body?.code !== 'idempotency_mismatch') c.violations.push({ invariant: 'S8', detail: `same key, different body answered ${statusOf(other)} ${other.text.slice(0, 200)} (expected 422 idempotency_mismatch)` });
        else c.ops += 1;
        // 3. The same key and body from another tenant: its own task.
        const theirs = await c.create(globex, 'synthetic', body.input, { key, plannedEffects: syntheticEffects(steps, 1) });
        const replayedAcross = theirs.op.attempts.some((a) => a.replayed);
        if (!theirs.taskId || theirs.taskId === id || replayedAcross) c.violations.push({ invariant: 'S15', detail: `another tenant's create with the same key answered ${statusOf(theirs.last)} task ${theirs.taskId ?? '-'} replayed=${replayedAcross} (acme's task ${id ?? '-'})` });
        // 4. A late replay (sequential) names the same task.
        const late = await burst(c, acme, key, body, 1, op);
        if (!ok(late.replies[0]!) || late.replies[0]!.body.id !== id) c.violations.push({ invariant: 'S8', detail: `a late replay answered ${statusOf(late.replies[0]!)} ${late.replies[0]!.text.slice(0, 120)}` });
        else c.ops += 1;
      }
      const settled = await c.settle(60_000);
      const { violations } = await c.check({ settled: 'terminal' });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      return { ops: c.ops, minOps: rounds * 4, violations, recovery: [], notes: [`${rounds} rounds of ${parallel} identical creates over 2 gateways, a different body, another tenant, a late replay`] };
    } finally {
      await c.close();
    }
  },
};

export const s9StaleInputs: Scenario = {
  id: 'S9',
  title: 'stale and concurrent inputs',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 4, 1000);
    const c = await Cluster.start(ctx, 'S9');
    try {
      await Promise.all([c.spawnGateway(), c.spawnGateway()]);
      await c.spawnWorker();
      const api = c.rest('ops1');
      const expect409 = (r: Reply, what: string) => {
        if (r.status === 409) c.ops += 1;
        else c.violations.push({ invariant: 'S9', detail: `${what} answered ${statusOf(r)} ${r.text.slice(0, 200)} (expected 409)` });
      };
      const one = async () => {
        const { taskId } = await c.create(api, 'synthetic', { steps: 2, stepMs: 0, effectsPerStep: 1, askAtStep: ctx.rng.int(0, 1), effectUrl: c.downstream.effectUrl }, { plannedEffects: syntheticEffects(2, 1) });
        if (!taskId) return;
        const waiting = await waitState(c, taskId, ['input_required']);
        if (!waiting) {
          c.violations.push({ invariant: 'S9', detail: 'task never asked its question', taskId });
          return;
        }
        const v = waiting.version;
        const gateways = c.liveGateways();
        const n = ctx.rng.int(3, 8);
        const answers = await Promise.all(Array.from({ length: n }, (_, i) => c.answer(api, taskId, v, { ok: true }, gateways[i % gateways.length])));
        const won = answers.filter(ok).length;
        if (won !== 1) c.violations.push({ invariant: 'S9', detail: `${n} concurrent answers to version ${v}: ${won} accepted`, taskId });
        for (const a of answers.filter((x) => !ok(x))) expect409(a, 'a losing concurrent answer');
        expect409(await c.answer(api, taskId, v, { ok: true }), 'a repeated answer');
        expect409(await c.answer(api, taskId, v + 7, { ok: true }), 'an answer naming a future version');
        const done = await waitState(c, taskId, ['completed', 'failed', 'canceled']);
        if (done) expect409(await c.answer(api, taskId, done.version, { ok: true }), 'an answer to a finished task');
      };
      for (let r = 0; r < rounds; r += 4) await Promise.all(Array.from({ length: Math.min(4, rounds - r) }, one));
      // An answer to a task still working.
      const { taskId: busy } = await c.create(api, 'synthetic', { steps: 3, stepMs: 400, effectsPerStep: 1, effectUrl: c.downstream.effectUrl }, { plannedEffects: syntheticEffects(3, 1) });
      if (busy) {
        const t = await waitState(c, busy, ['working']);
        if (t) expect409(await c.answer(api, busy, t.version, { ok: true }), 'an answer to a working task');
      }
      const settled = await c.settle(60_000);
      const { violations } = await c.check({ settled: 'terminal', mustComplete: () => true });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      return { ops: c.ops, minOps: rounds * 4, violations, recovery: [], notes: [`${rounds} questions answered concurrently (3-8 answers each, two gateways), then stale, future-version and late answers`] };
    } finally {
      await c.close();
    }
  },
};

type Race = 'complete' | 'claim' | 'input' | 'double' | 'compensate';

export const s10CancelRaces: Scenario = {
  id: 'S10',
  title: 'cancel races',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 16, 2000);
    const c = await Cluster.start(ctx, 'S10', { leaseMs: 1000 });
    const kinds: Record<Race, number> = { complete: 0, claim: 0, input: 0, double: 0, compensate: 0 };
    try {
      await Promise.all([c.spawnGateway(), c.spawnGateway()]);
      await Promise.all([c.spawnWorker({ concurrency: 8 }), c.spawnWorker({ concurrency: 8 })]);
      const api = c.rest('ops1');
      const races: Race[] = ['complete', 'claim', 'input', 'double', 'compensate'];
      const one = async (rng = ctx.rng.fork()) => {
        const race = rng.pick(races);
        kinds[race] += 1;
        const gateways = c.liveGateways();
        if (race === 'compensate') {
          const { taskId } = await c.create(api, 'account-migration', { records: 24, batchSize: 4, ambiguousEvery: 0, batchDelayMs: 20 });
          if (!taskId) return;
          await sleep(rng.int(0, 300));
          await c.cancel(api, taskId);
          return;
        }
        const steps = rng.int(1, 3);
        const input: Record<string, unknown> = { steps, stepMs: race === 'double' ? 100 : rng.int(0, 40), effectsPerStep: 1, effectUrl: c.downstream.effectUrl };
        if (race === 'input') input.askAtStep = 0;
        const { taskId } = await c.create(api, 'synthetic', input, { plannedEffects: syntheticEffects(steps, 1) });
        if (!taskId) return;
        if (race === 'complete') {
          await sleep(rng.int(0, 200));
          await c.cancel(api, taskId, rng.pick(gateways));
        } else if (race === 'claim') {
          await c.cancel(api, taskId, rng.pick(gateways));
        } else if (race === 'input') {
          const t = await waitState(c, taskId, ['input_required']);
          if (!t) return;
          await Promise.all([c.answer(api, taskId, t.version, { ok: true }, gateways[0]), c.cancel(api, taskId, gateways[1 % gateways.length])]);
        } else {
          await waitState(c, taskId, ['working']);
          await Promise.all(Array.from({ length: rng.int(2, 4) }, (_, i) => c.cancel(api, taskId, gateways[i % gateways.length])));
        }
      };
      for (let r = 0; r < rounds; r += 4) await Promise.all(Array.from({ length: Math.min(4, rounds - r) }, () => one()));
      for (const x of c.history.cancels) if (!ok({ status: x.status } as Reply)) c.violations.push({ invariant: 'S10', detail: `a cancellation answered ${String(x.status)} (cancellation is idempotent)`, taskId: x.taskId });
      const settled = await c.settle(60_000);
      const { violations, final } = await c.check({ settled: 'terminal' });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      // No effect starts after the cancellation is committed (the ledger's start time against the first cancel
      // event; both are this host's clock; 5 s of slack covers a SQLite writer waiting for the lock), and a worker's
      // cancellation report hides nothing the downstream received.
      let canceled = 0;
      for (const [id, events] of final.events) {
        const cancelEvent = events.find((e) => e.kind === 'cancel_requested' || e.kind === 'canceled');
        if (!cancelEvent) continue;
        if (final.tasks.get(id)?.state === 'canceled') canceled += 1;
        for (const e of final.effects.get(id) ?? []) {
          if (!e.key.startsWith('compensate:') && e.startedAt > cancelEvent.at + 5000) violations.push({ invariant: 'S10', detail: `effect ${e.key} started ${e.startedAt - cancelEvent.at} ms after the cancellation was committed`, taskId: id });
        }
        const report = events.find((e) => e.kind === 'canceled' && typeof e.body.fence === 'number');
        if (report) {
          const listed = new Set([...((report.body.effects_applied as string[] | undefined) ?? []), ...((report.body.effects_uncertain as string[] | undefined) ?? [])]);
          for (const r of c.history.receipts) {
            if (!r.key.startsWith(`${id}:`) || r.key.includes(':compensate:')) continue;
            const key = r.key.slice(id.length + 1);
            if (!listed.has(key) && r.at < report.at) violations.push({ invariant: 'S10', detail: `the cancellation report hides ${key}, which the downstream received before it`, taskId: id });
          }
        }
      }
      return {
        ops: c.ops,
        minOps: rounds,
        violations,
        recovery: [],
        notes: [`${rounds} races (${Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ')}), ${canceled} tasks ended cancelled`],
      };
    } finally {
      await c.close();
    }
  },
};
