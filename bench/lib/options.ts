/**
 * Bench options: `--quick` picks small sizes; every size can be set by a flag or by `BELAY_BENCH_<NAME>` (the flag
 * name in upper snake case, e.g. `BELAY_BENCH_WAITING_TASKS=20000`). Flags win over the environment.
 */
import { parseArgs } from 'node:util';

export type StoreKind = 'sqlite' | 'postgres';

export interface BenchOptions {
  quick: boolean;
  only: Set<string> | null;
  skip: Set<string>;
  stores: StoreKind[];
  pgAdminUrl: string;
  /** Measured window of each timed run (step commits). */
  durationMs: number;
  warmupMs: number;
  /** Alternating baseline/Belay rounds; the median is reported. */
  rounds: number;
  /** Rounds of the no-op comparison (each enqueues `noopJobs` per system). */
  noopRounds: number;
  stepWorkers: number[];
  e2eTasks: number;
  e2eWorkers: number[];
  noopJobs: number;
  noopWorkers: number[];
  /** Longest a no-op run may take (pg-boss polls, so it may not drain in time; the rate is what is reported). */
  noopMaxMs: number;
  latencySamples: number;
  recoveryTrials: number;
  leaseMs: number;
  waitingTasks: number;
  scalingSizes: number[];
  claimSamples: number;
  restConnections: number;
  restDurationS: number;
  sseSubscribers: number[];
  sseEvents: number;
  out: string | null;
}

const SPEC = {
  quick: { type: 'boolean' },
  only: { type: 'string' },
  skip: { type: 'string' },
  stores: { type: 'string' },
  'pg-url': { type: 'string' },
  'duration-ms': { type: 'string' },
  'warmup-ms': { type: 'string' },
  rounds: { type: 'string' },
  'step-workers': { type: 'string' },
  'e2e-tasks': { type: 'string' },
  'e2e-workers': { type: 'string' },
  'noop-jobs': { type: 'string' },
  'noop-workers': { type: 'string' },
  'noop-max-ms': { type: 'string' },
  'noop-rounds': { type: 'string' },
  'latency-samples': { type: 'string' },
  'recovery-trials': { type: 'string' },
  'lease-ms': { type: 'string' },
  'waiting-tasks': { type: 'string' },
  'scaling-sizes': { type: 'string' },
  'claim-samples': { type: 'string' },
  'rest-connections': { type: 'string' },
  'rest-duration-s': { type: 'string' },
  'sse-subscribers': { type: 'string' },
  'sse-events': { type: 'string' },
  out: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const SCENARIOS = ['step-commits', 'e2e', 'noop-peers', 'start-latency', 'recovery', 'waiting', 'scaling', 'rest', 'sse'] as const;

export const USAGE = `npm run bench [-- options]

  --quick                 small sizes (CI: proves the suite runs; under 2 minutes)
  --only a,b / --skip a,b scenarios: ${SCENARIOS.join(', ')}
  --stores sqlite,postgres
  --pg-url URL            admin connection (default postgres://root@127.0.0.1:5432/postgres); each scenario
                          creates and drops its own database
  --duration-ms --warmup-ms --rounds --step-workers 1,8
  --e2e-tasks --e2e-workers 1,2,4,8
  --noop-jobs --noop-workers 1,8 --noop-max-ms --noop-rounds
  --latency-samples --recovery-trials --lease-ms
  --waiting-tasks --scaling-sizes 1000,10000,100000 --claim-samples
  --rest-connections --rest-duration-s --sse-subscribers 1,100,1000 --sse-events
  --out FILE              also write the JSON lines to FILE
Every flag can also be set as BELAY_BENCH_<FLAG_IN_UPPER_SNAKE_CASE>.`;

function envName(flag: string): string {
  return `BELAY_BENCH_${flag.replaceAll('-', '_').toUpperCase()}`;
}

function positiveInt(v: string, what: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${what} must be a positive integer, got "${v}"`);
  return n;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions | 'help' {
  const { values } = parseArgs({ args: argv, options: SPEC, allowPositionals: false });
  if (values.help) return 'help';
  const str = (flag: keyof typeof SPEC): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    return env[envName(flag)];
  };
  const quick = values.quick === true || env.BELAY_BENCH_QUICK === '1' || env.BELAY_BENCH_QUICK === 'true';
  const int = (flag: keyof typeof SPEC, full: number, small: number) => {
    const v = str(flag);
    return v === undefined ? (quick ? small : full) : positiveInt(v, `--${flag}`);
  };
  const ints = (flag: keyof typeof SPEC, full: number[], small: number[]) => {
    const v = str(flag);
    return v === undefined ? (quick ? small : full) : v.split(',').map((s) => positiveInt(s.trim(), `--${flag}`));
  };
  const set = (flag: keyof typeof SPEC): Set<string> | null => {
    const v = str(flag);
    if (v === undefined || v.trim() === '') return null;
    const names = v.split(',').map((s) => s.trim());
    for (const n of names) if (!(SCENARIOS as readonly string[]).includes(n)) throw new Error(`Unknown scenario "${n}" (known: ${SCENARIOS.join(', ')})`);
    return new Set(names);
  };
  const storesRaw = str('stores') ?? 'sqlite,postgres';
  const stores = storesRaw.split(',').map((s) => s.trim());
  for (const s of stores) if (s !== 'sqlite' && s !== 'postgres') throw new Error(`--stores takes sqlite and/or postgres, got "${s}"`);
  return {
    quick,
    only: set('only'),
    skip: set('skip') ?? new Set(),
    stores: stores as StoreKind[],
    pgAdminUrl: str('pg-url') ?? env.BELAY_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/postgres',
    durationMs: int('duration-ms', 5000, 800),
    warmupMs: int('warmup-ms', 500, 200),
    rounds: int('rounds', 3, 1),
    noopRounds: int('noop-rounds', 2, 1),
    stepWorkers: ints('step-workers', [1, 8], [1, 8]),
    e2eTasks: int('e2e-tasks', 1000, 100),
    e2eWorkers: ints('e2e-workers', [1, 2, 4, 8], [8]),
    noopJobs: int('noop-jobs', 5000, 300),
    noopWorkers: ints('noop-workers', [1, 8], [8]),
    noopMaxMs: int('noop-max-ms', 15_000, 1500),
    latencySamples: int('latency-samples', 500, 30),
    recoveryTrials: int('recovery-trials', 3, 1),
    leaseMs: int('lease-ms', 5000, 1000),
    waitingTasks: int('waiting-tasks', 100_000, 300),
    scalingSizes: ints('scaling-sizes', [1000, 10_000, 100_000], [500, 2000]),
    claimSamples: int('claim-samples', 300, 30),
    restConnections: int('rest-connections', 16, 8),
    restDurationS: int('rest-duration-s', 10, 1),
    sseSubscribers: ints('sse-subscribers', [1, 100, 1000], [1, 20]),
    sseEvents: int('sse-events', 50, 5),
    out: str('out') ?? null,
  };
}

export function wanted(o: BenchOptions, scenario: string): boolean {
  if (o.skip.has(scenario)) return false;
  return o.only === null || o.only.has(scenario);
}
