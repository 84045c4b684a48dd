/**
 * The HTTP front (`belay/server`): REST create latency under load, and SSE fan-out latency.
 *
 * REST: autocannon (`bench/rest-load.ts`, in its own process) POSTs creates with a fresh Idempotency-Key each for
 * `--rest-duration-s` over `--rest-connections` connections to the server running in this process (no workers, no
 * rate limit). Baseline: `TaskService.createTask` called directly by as many concurrent loops for as long.
 *
 * SSE: N subscribers (their own process) stream one task's events; this process commits progress events to that
 * task through the store (holding its lease) and records when each commit resolved; latency = arrival - commit.
 * Baseline: the same commits, with a bare node:http server writing each frame to every open stream straight after
 * the commit resolves (the cost of fan-out itself; Belay adds the wake-up and a re-read of the log per stream).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../../src/core/clock.js';
import { Authenticator } from '../../src/protocols/http/auth.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Lease, Store } from '../../src/store/port.js';
import { openStore, withPlace } from '../lib/env.js';
import type { BenchOptions } from '../lib/options.js';
import { log, type Report } from '../lib/report.js';
import { percentile, sleep } from '../lib/stats.js';
import { claimProbeType, noopType, serviceRegistry, who } from '../lib/task-types.js';

const REST_LOAD = fileURLToPath(new URL('../rest-load.js', import.meta.url));
const SSE_CLIENTS = fileURLToPath(new URL('../sse-clients.js', import.meta.url));

async function belayServer(store: Store) {
  const service = new TaskService({ store, registry: serviceRegistry(), clock: systemClock });
  const key = `bench_${randomBytes(16).toString('hex')}`;
  const auth = new Authenticator({ apiKeys: [{ key, tenant: who.tenant, principal: who.principal, role: 'admin' }] });
  const app = createBelayApp({ service, auth, rateLimit: null });
  const server = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
  return { service, server, authorization: `Bearer ${key}` };
}

function runProcess(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args[0]} exited ${code}: ${err}`))));
  });
}

interface AutocannonResult {
  latency: { p50: number; p99: number };
  requests: { total: number };
  duration: number;
  non2xx: number;
  errors: number;
}

export async function rest(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'rest', async (place) => {
      const store = await openStore(place, { poolSize: o.restConnections + 2 });
      const { service, server, authorization } = await belayServer(store);
      try {
        // Baseline: the service called directly, same concurrency and duration.
        const lat: number[] = [];
        const end = performance.now() + o.restDurationS * 1000;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: o.restConnections }, async () => {
            while (performance.now() < end) {
              const s = performance.now();
              await service.createTask(who, { type: noopType.name, input: {}, idempotencyKey: randomBytes(12).toString('hex') });
              lat.push(performance.now() - s);
            }
          }),
        );
        const directRate = lat.length / ((performance.now() - t0) / 1000);
        const out = await runProcess([REST_LOAD, `${server.url}/v1/agent-tasks`, authorization, String(o.restConnections), String(o.restDurationS), noopType.name]);
        const r = JSON.parse(out) as AutocannonResult;
        if (r.non2xx > 0 || r.errors > 0 || r.requests.total === 0) throw new Error(`autocannon: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.requests.total} requests`);
        const rate = r.requests.total / r.duration;
        log(`  rest ${kind}: ${rate.toFixed(0)} creates/s over HTTP, p50 ${r.latency.p50} ms; direct ${directRate.toFixed(0)}/s, p50 ${percentile(lat, 50).toFixed(2)} ms`);
        const name = `TaskService.createTask called directly, ${o.restConnections} concurrent`;
        const c = o.restConnections;
        report.add({ figure: 'rest_create_p50', store: kind, workers: c, value: r.latency.p50, unit: 'ms', baseline: percentile(lat, 50), baselineName: name });
        report.add({ figure: 'rest_create_p99', store: kind, workers: c, value: r.latency.p99, unit: 'ms', baseline: percentile(lat, 99), baselineName: name });
        report.add({ figure: 'rest_creates', store: kind, workers: c, value: rate, unit: 'req/s', baseline: directRate, baselineName: name });
      } finally {
        await server.close();
        await store.close();
      }
    });
  }
}

/** Spawns the subscriber process and waits until every stream is open. */
async function subscribers(url: string, n: number, authorization: string, after: number): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn(process.execPath, [SSE_CLIENTS, url, String(n), authorization, String(after)], { stdio: 'pipe' });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('READY')) {
        child.stdout.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`sse clients exited ${code} before READY: ${err}`)));
  });
  return child;
}

async function collect(child: ChildProcessWithoutNullStreams, lastSeq: number): Promise<Record<string, number[]>> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.endsWith('\n')) resolve(JSON.parse(line) as Record<string, number[]>);
    });
    child.once('exit', (code) => {
      // Resolved already when the line arrived; otherwise the subscribers died or sent nothing.
      reject(new Error(`sse clients exited ${code} without their arrival times`));
    });
    child.stdin.write(`DONE ${lastSeq}\n`);
  });
}

/** Commits `events` progress events to the leased task, `gapMs` apart; returns seq → commit time (epoch ms). */
async function commitEvents(store: Store, lease: Lease, events: number, gapMs: number, onCommit: (seq: number, at: number) => void): Promise<number> {
  let last = 0;
  for (let i = 1; i <= events; i++) {
    const now = Date.now();
    const progress = { current: i, total: events, message: null };
    const out = await store.commit({
      lease,
      now,
      kind: 'progress',
      state: 'working',
      step: 0,
      checkpoint: { i },
      progress,
      pendingInput: null,
      result: null,
      artifacts: undefined,
      error: null,
      leaseUntil: now + 3600_000,
      wakeAt: now + 3600_000,
      resetAttempts: false,
      expiresAt: null,
      event: { kind: 'progress', body: { state: 'working', step: 0, step_name: 'never', completed_step: null, steps_total: 1, progress, substep: true } },
    });
    if (!out.ok) throw new Error(`sse: commit refused (${out.reason})`);
    onCommit(out.seq, performance.timeOrigin + performance.now());
    last = out.seq;
    await sleep(gapMs);
  }
  return last;
}

function latencies(commits: Map<number, number>, arrivals: Record<string, number[]>, n: number): number[] {
  const out: number[] = [];
  for (const [seq, at] of commits) {
    const got = arrivals[String(seq)] ?? [];
    if (got.length !== n) throw new Error(`sse: event ${seq} reached ${got.length} of ${n} subscribers`);
    for (const t of got) out.push(t - at);
  }
  return out;
}

export async function sse(o: BenchOptions, report: Report): Promise<void> {
  for (const kind of o.stores) {
    await withPlace(kind, o.pgAdminUrl, 'sse', async (place) => {
      const store = await openStore(place, { poolSize: 20 });
      const { service, server, authorization } = await belayServer(store);
      try {
        const { task } = await service.createTask(who, { type: claimProbeType.name, input: {} });
        const [claimed] = await store.claimTasks({ workerId: 'bench-sse', now: Date.now(), leaseMs: 3600_000, limit: 1, kinds: [{ type: claimProbeType.name, version: 1 }] });
        if (!claimed) throw new Error('sse: could not claim the task');
        const lease = claimed.lease;
        let after = claimed.task.nextSeq - 1;
        for (const n of o.sseSubscribers) {
          const gapMs = n >= 500 ? 300 : 100;
          // Baseline: bare node:http fan-out of the same frames.
          const open: http.ServerResponse[] = [];
          const raw = http.createServer((req, res) => {
            res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
            res.write('retry: 2000\n\n');
            open.push(res);
          });
          await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
          const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;
          const rawClients = await subscribers(rawUrl, n, '-', after);
          const rawCommits = new Map<number, number>();
          const rawLast = await commitEvents(store, lease, o.sseEvents, gapMs, (seq, at) => {
            rawCommits.set(seq, at);
            const frame = `id: ${seq}\nevent: progress\ndata: {"seq":${seq}}\n\n`;
            for (const res of open) res.write(frame);
          });
          const rawLat = latencies(rawCommits, await collect(rawClients, rawLast), n);
          for (const res of open) res.end();
          raw.closeAllConnections();
          await new Promise<void>((resolve) => raw.close(() => resolve()));
          after = rawLast;

          const clients = await subscribers(`${server.url}/v1/agent-tasks/${task.id}/events`, n, authorization, after);
          const commits = new Map<number, number>();
          const last = await commitEvents(store, lease, o.sseEvents, gapMs, (seq, at) => commits.set(seq, at));
          const lat = latencies(commits, await collect(clients, last), n);
          after = last;
          log(`  sse ${kind} x${n}: p50 ${percentile(lat, 50).toFixed(2)} ms, p99 ${percentile(lat, 99).toFixed(2)} ms; bare fan-out p50 ${percentile(rawLat, 50).toFixed(2)} ms`);
          const name = 'bare node:http writing the frame to every stream after the commit';
          report.add({ figure: 'sse_fanout_p50', store: kind, workers: n, value: percentile(lat, 50), unit: 'ms', baseline: percentile(rawLat, 50), baselineName: name });
          report.add({ figure: 'sse_fanout_p99', store: kind, workers: n, value: percentile(lat, 99), unit: 'ms', baseline: percentile(rawLat, 99), baselineName: name });
        }
      } finally {
        await server.close();
        await store.close();
      }
    });
  }
}
