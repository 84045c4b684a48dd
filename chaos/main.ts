/**
 * `npm run chaos [-- --full] [--store sqlite,postgres] [--only S1,S3] [--seed N] [--scenario-seed N] [--no-regressions]`
 * (`--seed` is the run seed every scenario's seed derives from; `--scenario-seed` gives the printed seed of one
 * scenario back to it, to replay that scenario exactly as it ran.)
 *
 * Runs the reliability scorecard (reliability-security.md §8) against real Belay processes on 127.0.0.1, on both
 * stores. One line per scenario: seed, successful operations (and the minimum required), invariant violations,
 * recovery p50/p99. Failing seeds are saved under test/regressions/ and replayed by every quick run. The last line
 * is `chaos: <N> scenarios, <M> operations, <V> violations`; the exit code is 1 on any violation.
 *
 * A seed fixes the schedule (what is created, killed, paused, when and where), not the operating system's
 * interleaving: a replay reproduces the same fault plan against the same code.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ScenarioContext, Tier } from './cluster.js';
import { describeViolations } from './history-checker.js';
import type { Violation } from './history.js';
import { PgRun, type StoreKind } from './lib/db.js';
import { deriveSeed, Rng } from './lib/prng.js';
import { percentile, type Scenario, type ScenarioResult } from './scenario.js';
import { REGRESSIONS_DIR as REGRESSIONS, REPO_ROOT } from './lib/paths.js';
import { SCENARIOS, NOT_COVERED } from './scenarios/index.js';

interface Regression {
  scenario: string;
  store: StoreKind;
  seed: number;
  tier: Tier;
  found: string;
  violations: string[];
}

const tierOf = (argv: string[]): Tier => (argv.includes('--full') ? 'full' : 'quick');

function parseArgs(argv: string[]) {
  const get = (name: string) => {
    const i = argv.indexOf(name);
    if (i >= 0) return argv[i + 1];
    const eq = argv.find((a) => a.startsWith(`${name}=`));
    return eq?.slice(name.length + 1);
  };
  const stores = (get('--store') ?? process.env.BELAY_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()).filter((s): s is StoreKind => s === 'sqlite' || s === 'postgres');
  const only = get('--only')?.split(',').map((s) => s.trim().toUpperCase());
  const seed = get('--seed');
  const exact = get('--scenario-seed');
  return {
    exactSeed: exact === undefined ? null : Number(exact),
    tier: tierOf(argv),
    stores,
    only,
    seed: seed === undefined ? Date.now() % 1_000_000_000 : Number(seed),
    regressions: !argv.includes('--no-regressions'),
    list: argv.includes('--list'),
  };
}

function loadRegressions(): Regression[] {
  if (!existsSync(REGRESSIONS)) return [];
  return readdirSync(REGRESSIONS)
    .filter((f) => f.startsWith('chaos-') && f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(REGRESSIONS, f), 'utf8')) as Regression);
}

function saveRegression(r: Regression): string {
  mkdirSync(REGRESSIONS, { recursive: true });
  const file = join(REGRESSIONS, `chaos-${r.scenario}-${r.store}-${r.seed}.json`);
  if (!existsSync(file)) writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)}ms`);

/** PostgreSQL must be up when the run ends, whatever S4 did to it. */
function ensurePostgresUp(): void {
  try {
    execFileSync('pg_isready', ['-h', '127.0.0.1', '-p', '5432', '-q']);
    return;
  } catch {
    // start it below
  }
  const version = readdirSync('/etc/postgresql')[0];
  try {
    if (version) execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'ignore' });
  } catch {
    // reported by the readiness loop
  }
  for (let i = 0; i < 60; i++) {
    try {
      execFileSync('pg_isready', ['-h', '127.0.0.1', '-p', '5432', '-q']);
      return;
    } catch {
      execFileSync('sleep', ['1']);
    }
  }
  console.error('chaos: PostgreSQL did not come back up');
}

async function runOne(s: Scenario, kind: StoreKind, tier: Tier, seed: number, pgRun: PgRun): Promise<ScenarioResult> {
  const rng = new Rng(seed);
  const ctx: ScenarioContext = { kind, tier, seed, rng, pgRun, log: (line) => console.log(`    ${line}`) };
  try {
    return await s.run(ctx);
  } catch (e) {
    return { ops: 0, minOps: 1, violations: [{ invariant: 'ERROR', detail: `scenario failed to run: ${(e as Error).stack ?? String(e)}` }], recovery: [], notes: [] };
  }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.list) {
    for (const s of SCENARIOS) console.log(`${s.id}  ${s.title}  [${s.stores.join(', ')}]`);
    for (const n of NOT_COVERED) console.log(`${n.id}  ${n.title}  (not covered: ${n.why})`);
    return 0;
  }
  const pgRun = new PgRun();
  const jobs: Array<{ s: Scenario; kind: StoreKind; seed: number; replay?: Regression }> = [];
  if (args.regressions) {
    for (const r of loadRegressions()) {
      const s = SCENARIOS.find((x) => x.id === r.scenario);
      if (s && args.stores.includes(r.store) && (!args.only || args.only.includes(s.id))) jobs.push({ s, kind: r.store, seed: r.seed, replay: r });
    }
  }
  for (const kind of args.stores) {
    for (const s of SCENARIOS) {
      if (!s.stores.includes(kind) || (args.only && !args.only.includes(s.id))) continue;
      jobs.push({ s, kind, seed: args.exactSeed ?? deriveSeed(args.seed, `${s.id}:${kind}`) });
    }
  }
  console.log(`chaos: ${args.tier} tier, run seed ${args.seed}, stores ${args.stores.join(', ')}, ${jobs.length} scenario runs`);
  let ops = 0;
  let violations = 0;
  let touchedPostgres = false;
  try {
    for (const job of jobs) {
      const started = Date.now();
      if (job.s.id === 'S4') touchedPostgres = true;
      const tier = job.replay?.tier ?? args.tier;
      const r = await runOne(job.s, job.kind, tier, job.seed, pgRun);
      const extra: Violation[] = [];
      if (r.ops < r.minOps) extra.push({ invariant: 'MIN_OPS', detail: `only ${r.ops} operations succeeded (at least ${r.minOps} required)` });
      const all = [...r.violations, ...extra];
      ops += r.ops;
      violations += all.length;
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `${pad(job.s.id, 4)}${pad(job.s.title, 44)} ${pad(job.kind, 8)} seed=${pad(String(job.seed), 10)} ops=${pad(`${r.ops}/${r.minOps}`, 10)} violations=${pad(String(all.length), 3)} recovery p50=${pad(ms(percentile(r.recovery, 50)), 7)} p99=${pad(ms(percentile(r.recovery, 99)), 7)} ${secs}s${job.replay ? ' (regression replay)' : ''}`,
      );
      for (const n of r.notes) console.log(`      ${n}`);
      if (all.length) {
        for (const line of describeViolations(all)) console.log(`    ${line}`);
        if (all.length > 8) console.log(`      ... ${all.length - 8} more`);
        if (!job.replay) {
          const file = saveRegression({
            scenario: job.s.id,
            store: job.kind,
            seed: job.seed,
            tier,
            found: new Date().toISOString(),
            violations: all.slice(0, 8).map((v) => `${v.invariant}: ${v.detail}`.slice(0, 500)),
          });
          console.log(`      saved ${relative(REPO_ROOT, file)} (replayed by every quick run)`);
        }
      }
    }
  } finally {
    if (touchedPostgres) ensurePostgresUp();
    await pgRun.drop().catch((e: unknown) => console.error(`chaos: could not drop ${pgRun.database}: ${(e as Error).message}`));
  }
  for (const n of NOT_COVERED) console.log(`${pad(n.id, 4)}${pad(n.title, 44)} not covered: ${n.why}`);
  console.log(`chaos: ${jobs.length} scenarios, ${ops} operations, ${violations} violations`);
  return violations > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Keep-alive sockets and timers of killed processes must not hold the run open.
    setTimeout(() => process.exit(code), 200).unref();
  },
  (e: unknown) => {
    console.error(e);
    console.log('chaos: 0 scenarios, 0 operations, 1 violations');
    process.exit(1);
  },
);
