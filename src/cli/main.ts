#!/usr/bin/env node
/**
 * @module cli/main
 * The `belay` command: a composition root. It picks the command group; each group (one file under src/cli/) reads
 * its own flags, environment and config file. Exit codes: 0 ok, 1 failure, 2 bad usage or configuration.
 */
import { coerceError } from '../core/errors.js';
import { CONFIG_HELP, UsageError } from './config.js';
import { demoCommand } from './demo.js';
import { doctorCommand } from './doctor.js';
import { migrateCommand } from './migrate.js';
import { serveCommand } from './serve.js';
import { tasksCommand } from './tasks.js';
import { workerCommand } from './worker.js';

const USAGE = `Usage: belay <command> [options]      (belay <command> --help for its options)

Commands:
  serve     Start the REST API, the web dashboard and workers, with the example task types (SQLite by default)
  worker    Run workers for the example task types until SIGTERM
  migrate   Apply migrations and print the schema version
  tasks     list | show | events | watch | answer | cancel | retry, through the REST API (--url, --api-key)
  doctor    Check the store (schema, stranded tasks) and the server (reachable, ready, key accepted)
  demo      Run the access-review example end to end on SQLite and print its progress

Every command takes --config <path> and --help; client commands take --json.
Environment: BELAY_DB, BELAY_URL, BELAY_API_KEY, BELAY_API_KEYS, BELAY_CONFIG, BELAY_LOG_LEVEL,
BELAY_DOWNSTREAM_URL (examples act on this HTTP downstream), BELAY_CRASH_AT (label:nth, chaos tests only).

${CONFIG_HELP}`;

const COMMANDS: Record<string, (argv: string[], env: NodeJS.ProcessEnv) => Promise<number>> = {
  serve: serveCommand,
  worker: workerCommand,
  migrate: migrateCommand,
  tasks: tasksCommand,
  doctor: doctorCommand,
  demo: demoCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  const run = COMMANDS[command];
  if (!run) {
    console.error(`belay: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  return run(rest, process.env);
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      console.error(`belay: ${e.message}${e.usage ? `\n(run "belay ${argv[0]} --help" for the options)` : ''}`);
      process.exitCode = 2;
      return;
    }
    console.error(`belay: ${coerceError(e).message}`);
    process.exitCode = 1;
  },
);
