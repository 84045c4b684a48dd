/**
 * S3: the API server dies mid-create. (a) Precisely between commit and response: the client talks to a gateway
 * through a proxy that holds the answer; once the task is committed (seen in the store) the gateway is SIGKILLed and
 * the client's connection dies with no answer; the client retries the same Idempotency-Key on another gateway and
 * must get the same task back, marked replayed. (b) At random: clients create through two gateways while they are
 * SIGKILLed and restarted at random moments; every logical create makes exactly one task.
 */
import { Cluster, isSynthetic, syntheticEffects, type ScenarioContext } from '../cluster.js';
import { TcpProxy } from '../lib/tcp-proxy.js';
import type { BelayProc } from '../lib/procs.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';

export const s3GatewayKills: Scenario = {
  id: 'S3',
  title: 'SIGKILL the API server mid-create',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 4, 100);
    const randomKills = sized(ctx.tier, 4, 100);
    const c = await Cluster.start(ctx, 'S3', { leaseMs: 1000 });
    const recovery: number[] = [];
    let precise = 0;
    let replayedAfterLoss = 0;
    try {
      const stable = await c.spawnGateway();
      await c.spawnWorker();
      const client = c.rest('ops1');
      const rng = ctx.rng;

      // (a) commit, then kill before the answer reaches the client.
      let victim: BelayProc = await c.spawnGateway();
      for (let r = 0; r < rounds; r++) {
        const proxy = new TcpProxy('127.0.0.1', Number(new URL(victim.readyValue!).port));
        await proxy.start();
        proxy.setMode('hold');
        const viaProxy = `http://127.0.0.1:${proxy.port}`;
        const steps = rng.int(1, 3);
        const input = { steps, stepMs: 5, effectsPerStep: 1, effectUrl: c.downstream.effectUrl };
        const key = c.newKey('lost-answer');
        // The first attempt goes through the proxy; every retry to the stable gateway.
        let attempt = 0;
        const killer = (async () => {
          const end = Date.now() + 10_000;
          while (Date.now() < end) {
            const found = await c.db.store.listTasks({ tenant: 'acme', contextId: `ctx-${key}`, limit: 1 }).catch(() => []);
            if (found.length) {
              const at = Date.now();
              victim.signal('SIGKILL');
              proxy.resetAll();
              return at;
            }
            await sleep(3);
          }
          return null;
        })();
        const created = await c.create(client, 'synthetic', input, {
          key,
          plannedEffects: syntheticEffects(steps, 1),
          base: () => (attempt++ === 0 ? viaProxy : stable.readyValue!),
        });
        const killedAt = await killer;
        await proxy.close();
        const first = created.op.attempts[0];
        const answered = created.op.attempts.find((a) => a.taskId);
        if (killedAt !== null && first?.status === 'network') {
          precise += 1;
          if (answered) recovery.push(answered.at - killedAt);
          if (answered?.replayed) replayedAfterLoss += 1;
          else c.violations.push({ invariant: 'S3', detail: `the retry after a lost answer was not a replay (key ${key}, answer ${JSON.stringify(created.op.attempts)})`, ...(answered?.taskId ? { taskId: answered.taskId } : {}) });
        } else if (killedAt !== null) {
          c.violations.push({ invariant: 'S3', detail: `the gateway was killed after the commit but the client still got ${String(first?.status)}` });
        }
        victim = await c.spawnGateway();
      }

      // (b) random gateway kills under concurrent creates.
      let stop = false;
      const clients = ['ops2', 'ops3', 'ops4'] as const;
      const load = clients.map(async (who) => {
        const api = c.rest(who);
        const r = rng.fork();
        while (!stop) {
          const steps = r.int(1, 3);
          await c.create(api, 'synthetic', { steps, stepMs: 5, effectsPerStep: 1, effectUrl: c.downstream.effectUrl }, { plannedEffects: syntheticEffects(steps, 1), deadlineMs: 20_000 });
        }
      });
      for (let k = 0; k < randomKills; k++) {
        await sleep(rng.int(50, 1500));
        const gateways = c.procs.filter((p) => p.kind === 'gateway' && p.alive && p !== stable);
        if (gateways.length === 0) continue;
        rng.pick(gateways).signal('SIGKILL');
        void c.spawnGateway().catch(() => undefined);
      }
      stop = true;
      await Promise.all(load);
      const unanswered = c.history.creates.filter((op) => !op.attempts.some((a) => a.taskId));
      for (const op of unanswered) {
        c.violations.push({ invariant: 'S3', detail: `create ${op.key} never answered 2xx: ${JSON.stringify(op.attempts.slice(-3))}` });
      }
      const settled = await c.settle(60_000);
      const { violations } = await c.check({ settled: 'terminal', mustComplete: isSynthetic });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 60 s' });
      const lost = c.history.creates.filter((op) => op.attempts.some((a) => a.status === 'network') && op.attempts.some((a) => a.taskId));
      return {
        ops: c.ops,
        minOps: rounds + sized(ctx.tier, 12, 300),
        violations,
        recovery,
        notes: [
          `${precise}/${rounds} kills exactly between commit and answer (${replayedAfterLoss} retries replayed the committed task); ${randomKills} random gateway kills; ${lost.length} creates lost an answer and were retried with the same key`,
        ],
      };
    } finally {
      await c.close();
    }
  },
};
