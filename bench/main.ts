/**
 * `npm run bench [-- --quick]`: Belay's figures, each next to a baseline measured in the same run.
 * stdout: one JSON line per figure. stderr: progress, notes (query plans, index names) and the table.
 * Exits non-zero only when a scenario fails to run; it never judges speed.
 */
import { cpus, totalmem } from 'node:os';
import { SCENARIOS, USAGE, parseOptions, wanted, type BenchOptions } from './lib/options.js';
import { Report, log } from './lib/report.js';
import { e2e } from './scenarios/e2e.js';
import { rest, sse } from './scenarios/http.js';
import { noopPeers } from './scenarios/noop-peers.js';
import { recovery } from './scenarios/recovery.js';
import { scaling } from './scenarios/scaling.js';
import { startLatency } from './scenarios/start-latency.js';
import { stepCommits } from './scenarios/step-commits.js';
import { waiting } from './scenarios/waiting.js';

type Scenario = (o: BenchOptions, report: Report) => Promise<void>;

const RUNNERS: Record<(typeof SCENARIOS)[number], Scenario | null> = {
  'step-commits': stepCommits,
  e2e,
  'noop-peers': noopPeers,
  'start-latency': startLatency,
  recovery,
  waiting,
  scaling,
  rest,
  sse,
};

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2), process.env);
  if (o === 'help') {
    log(USAGE);
    return 0;
  }
  const report = new Report(o.out);
  log(`belay bench (${o.quick ? 'quick' : 'full'}): node ${process.version}, ${cpus().length} cpus, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, stores ${o.stores.join(',')}`);
  const started = performance.now();
  const failed: string[] = [];
  for (const name of SCENARIOS) {
    const run = RUNNERS[name];
    if (!run || !wanted(o, name)) continue;
    const t0 = performance.now();
    log(`== ${name}`);
    try {
      await run(o, report);
    } catch (e) {
      failed.push(name);
      log(`!! ${name} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
    log(`   ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  log('');
  log(report.table());
  if (report.notes.length > 0) log(`\nnotes:\n${report.notes.map((n) => `- ${n}`).join('\n')}`);
  log(`\n${report.figures.length} figures in ${((performance.now() - started) / 1000).toFixed(1)} s${failed.length ? `; FAILED: ${failed.join(', ')}` : ''}`);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    log(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exitCode = 1;
  },
);
