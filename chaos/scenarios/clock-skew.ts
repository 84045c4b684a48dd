/**
 * S7: workers whose clocks are wrong (BELAY_CLOCK_SKEW_MS, read by the CLI and applied to the injected clock). Leases,
 * wake-ups and deadlines are written with the WRITER's clock, so skew moves them. Each phase runs one honest worker
 * next to one skewed worker under load, then kills the skewed one. Measured per phase, from the fence log (whose
 * times are the database's, i.e. true time): early steals (a grant taken while the previous holder's lease was
 * still valid in true time) and how long the killed worker's leases keep its tasks from everyone else.
 * Safety (no lost task, effects once, no stale commit) must hold at every skew: that is the fence's job.
 */
import { Cluster, isSynthetic, type ScenarioContext } from '../cluster.js';
import type { FenceGrant } from '../history.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';
import { background } from './infra-faults.js';

export const s7ClockSkew: Scenario = {
  id: 'S7',
  title: 'clock skew on workers',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const L = 1000;
    const skews = ctx.tier === 'full' ? [200, -200, 500, -500, 700, -700, 1000, -1000, 2000, -2000, 30_000, -30_000, 600_000, -600_000] : [200, -200, 2000, -2000, 600_000];
    const phaseMs = sized(ctx.tier, 2500, 15_000);
    const c = await Cluster.start(ctx, 'S7', { leaseMs: L });
    const skewOf = new Map<string, number>();
    const phases: Array<{ skew: number; from: number; to: number; stuckMs: number; worker: string }> = [];
    try {
      await c.spawnGateway();
      const honest = await c.spawnWorker({ concurrency: 8 });
      skewOf.set(honest.readyValue!, 0);
      let stop = false;
      const load = background(c, ctx.rng.fork(), 8, () => stop, { maxSteps: 5, ask: 0.1, stepMs: [50, 150] });
      for (const skew of skews) {
        const from = Date.now();
        const w = await c.spawnWorker({ concurrency: 8, skewMs: skew });
        skewOf.set(w.readyValue!, skew);
        await sleep(phaseMs);
        await w.kill();
        // How long the dead worker's leases still lock its tasks away (true time).
        const held = (await c.db.store.listTasks({ tenant: 'acme', states: ['working'], limit: 200 })).filter((t) => t.leaseOwner === w.readyValue);
        const stuckMs = Math.max(0, ...held.map((t) => (t.wakeAt ?? 0) - Date.now()));
        phases.push({ skew, from, to: Date.now(), stuckMs, worker: w.readyValue! });
        await sleep(300);
      }
      stop = true;
      await load;
      // Drain: a worker as far ahead as the furthest skew reaches every wake-up the skewed workers pushed out.
      const furthest = Math.max(...skews);
      const drain = await c.spawnWorker({ concurrency: 16, skewMs: furthest + L });
      skewOf.set(drain.readyValue!, furthest + L);
      const settled = await c.settle(90_000, c.rest('ops3'));
      const { violations, final } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 90 s of the drain' });
      const grants: FenceGrant[] = final.fenceLog ?? [];
      const notes: string[] = [];
      for (const p of phases) {
        const inPhase = grants.filter((g) => g.dbTime >= p.from && g.dbTime <= p.to && g.owner !== null);
        let early = 0;
        for (const g of inPhase) {
          if (!g.prevOwner || g.prevOwner === g.owner || g.prevLeaseUntil === null || g.oldState !== 'working') continue;
          const prevSkew = skewOf.get(g.prevOwner) ?? 0;
          if (g.prevLeaseUntil - prevSkew > g.dbTime + 20) early += 1;
        }
        const own = inPhase.filter((g) => g.owner === p.worker).length;
        notes.push(`skew ${p.skew > 0 ? '+' : ''}${p.skew} ms: ${early} early steals in ${inPhase.length} grants (${own} to the skewed worker); its leases outlived it by ${Math.round(p.stuckMs)} ms`);
        c.ops += inPhase.length;
      }
      return { ops: c.ops, minOps: skews.length * 5, violations, recovery: [], notes };
    } finally {
      await c.close();
    }
  },
};
