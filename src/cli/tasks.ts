/**
 * @module cli/tasks
 * `belay tasks list | show | events | watch | answer | cancel | retry`: an operator's view of tasks, through the
 * REST API only (the same calls any client makes), so it works against any gateway of any deployment.
 *
 * Exit codes: 0 success; 1 the server refused or could not be reached; 2 bad usage or configuration;
 * 3 `watch` (and `events --follow`) saw the task end failed or cancelled.
 */
import { readFileSync } from 'node:fs';
import { CONFIG_HELP, UsageError, parseFlags, parseIntSetting, resolveClientSettings, type ParsedFlags } from './config.js';
import { exampleValue, progressBar, progressText, schemaSummary, shellQuote, shortTime, table, type ProgressLike } from './format.js';
import { ApiError, RestClient, ServerUnreachable, type SseEvent } from './rest-client.js';

export const TASKS_USAGE = `Usage: belay tasks <command> [options]

Commands:
  list                      The caller's tasks, newest first
      [--status s[,s]] [--type t] [--limit n] [--cursor c] [--created-after iso] [--created-before iso] [--all]
  show <id>                 Status, progress, question, error, artifacts [--operator: lease, fence, checkpoint]
  events <id>               The event log [--after seq] [--follow: stream until the task ends]
  watch <id>                A live progress bar from the event stream; reconnects (Last-Event-ID) across
                            server restarts [--reconnect-timeout s, default 300]
  answer <id> [<json>]      Answer the pending question [--answer json | --answer-file path|-] [--key k]
                            [--version n: defaults to the question's current version]
  cancel <id>               Request cancellation [--reason text]
  retry <id>                Start a NEW task with the same type and input (terminal states are final, so a
                            failed or cancelled task is never restarted in place). The idempotency key is
                            retry:<id>:<attempt>, so repeating the command does not start a second task;
                            --attempt n (default 1) starts another one; --force retries a completed task.

Options for every command:
  --url <url>               Server (BELAY_URL, config "url"; default http://127.0.0.1:8787)
  --api-key <key>           Bearer key (BELAY_API_KEY, config "apiKey")
  --config <path>           Config file (BELAY_CONFIG; default .belay/config.json)
  --db <path>               Where \`belay serve\` keeps its development key when no key is set (.belay/api-key
                            next to the database; BELAY_DB, config "db")
  --json                    Machine-readable output: one JSON document, or one JSON event per line when streaming

Exit codes: 0 ok, 1 refused or unreachable, 2 bad usage or configuration, 3 watched task failed or was cancelled.

${CONFIG_HELP}`;

const OPTIONS = {
  url: { type: 'string' },
  db: { type: 'string' },
  'api-key': { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  status: { type: 'string' },
  type: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  all: { type: 'boolean' },
  operator: { type: 'boolean' },
  after: { type: 'string' },
  follow: { type: 'boolean' },
  'reconnect-timeout': { type: 'string' },
  answer: { type: 'string' },
  'answer-file': { type: 'string' },
  key: { type: 'string' },
  version: { type: 'string' },
  reason: { type: 'string' },
  attempt: { type: 'string' },
  force: { type: 'boolean' },
} as const;

/** Which options each command takes (the common ones are always allowed). */
const ALLOWED: Record<string, Array<keyof typeof OPTIONS>> = {
  list: ['status', 'type', 'limit', 'cursor', 'created-after', 'created-before', 'all'],
  show: ['operator'],
  events: ['after', 'follow', 'reconnect-timeout'],
  watch: ['after', 'reconnect-timeout'],
  answer: ['answer', 'answer-file', 'key', 'version'],
  cancel: ['reason'],
  retry: ['attempt', 'force'],
};
const COMMON = ['url', 'api-key', 'config', 'db', 'json', 'help'];
const REST_STATUSES = ['queued', 'working', 'input_required', 'completed', 'failed', 'cancelled'];
const CANONICAL_STATES = ['submitted', 'working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled', 'rejected'];
const TERMINAL_EVENTS = new Set(['completed', 'failed', 'canceled']);
const TERMINAL_STATUSES = new Set(['completed', 'failed', 'cancelled']);

type Values = ParsedFlags<typeof OPTIONS>['values'];

interface Io {
  out(text: string): void;
  err(text: string): void;
  isTty: boolean;
}

const stdio: Io = {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
  isTty: process.stdout.isTTY === true,
};

export async function tasksCommand(argv: string[], env: NodeJS.ProcessEnv, io: Io = stdio): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, TASKS_USAGE);
  const sub = positionals[0];
  if (values.help || !sub) {
    io.out(TASKS_USAGE);
    return sub || values.help ? 0 : 2;
  }
  if (!(sub in ALLOWED)) throw new UsageError(`unknown tasks command "${sub}" (one of: ${Object.keys(ALLOWED).join(', ')})`, TASKS_USAGE);
  const allowed = new Set<string>([...COMMON, ...ALLOWED[sub]!]);
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && !allowed.has(name)) throw new UsageError(`--${name} does not apply to "tasks ${sub}"`, TASKS_USAGE);
  }
  const settings = resolveClientSettings(values, env);
  const client = new RestClient(settings.url.value, settings.apiKey?.value ?? null);
  const args = positionals.slice(1);
  const id = () => {
    if (!args[0]) throw new UsageError(`"tasks ${sub}" needs a task id`, TASKS_USAGE);
    if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(args[0])) throw new UsageError(`"${args[0]}" is not a task id`);
    return args[0];
  };
  const maxArgs = sub === 'list' ? 0 : sub === 'answer' ? 2 : 1;
  if (args.length > maxArgs) throw new UsageError(`unexpected argument "${args[maxArgs]}" for "tasks ${sub}"`, TASKS_USAGE);
  switch (sub) {
    case 'list':
      return list(client, values, io);
    case 'show':
      return show(client, id(), values, io);
    case 'events':
      return values.follow ? follow(client, id(), values, io, false) : events(client, id(), values, io);
    case 'watch':
      return follow(client, id(), values, io, true);
    case 'answer':
      return answer(client, id(), args[1], values, io);
    case 'cancel':
      return cancel(client, id(), values, io);
    case 'retry':
      return retry(client, id(), values, io);
    default:
      return 2;
  }
}

const path = (id: string, tail = '') => `/v1/agent-tasks/${encodeURIComponent(id)}${tail}`;
const json = (v: unknown) => JSON.stringify(v, null, 2);

function isoFlag(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(Date.parse(value))) throw new UsageError(`--${name} must be an ISO 8601 time such as 2026-07-01T00:00:00Z, got "${value}"`);
  return value;
}

async function list(client: RestClient, v: Values, io: Io): Promise<number> {
  const query = new URLSearchParams();
  if (v.status !== undefined) {
    for (const s of v.status.split(',')) {
      if (!REST_STATUSES.includes(s) && !CANONICAL_STATES.includes(s)) throw new UsageError(`--status "${s}" is not a status (one of: ${REST_STATUSES.join(', ')})`);
    }
    query.set('status', v.status);
  }
  if (v.type !== undefined) query.set('type', v.type);
  query.set('limit', String(v.limit === undefined ? 20 : parseIntSetting(v.limit, '--limit', 1, 100)));
  const after = isoFlag(v['created-after'], 'created-after');
  const before = isoFlag(v['created-before'], 'created-before');
  if (after) query.set('created_after', after);
  if (before) query.set('created_before', before);
  if (v.cursor !== undefined) query.set('cursor', v.cursor);
  const tasks: any[] = [];
  let next: string | null = null;
  for (;;) {
    const page = await client.get<{ tasks: any[]; next_cursor: string | null }>(`/v1/agent-tasks?${query.toString()}`);
    tasks.push(...page.body.tasks);
    next = page.body.next_cursor;
    if (!v.all || !next) break;
    query.set('cursor', next);
  }
  if (v.json) {
    io.out(json({ tasks, next_cursor: next }));
    return 0;
  }
  if (tasks.length === 0) {
    io.out('no tasks');
    return 0;
  }
  io.out(
    table(
      ['ID', 'TYPE', 'STATUS', 'PROGRESS', 'STEP', 'CREATED'],
      tasks.map((t) => [
        t.id,
        `${t.type}@${t.type_version}`,
        t.status,
        t.progress && typeof t.progress.current === 'number' ? `${t.progress.current}${typeof t.progress.total === 'number' ? `/${t.progress.total}` : ''}` : '',
        t.step?.name ? `${t.step.index + 1}/${t.step.total} ${t.step.name}` : '',
        shortTime(t.created_at),
      ]),
    ),
  );
  if (next) io.out(`more: belay tasks list --cursor ${next}${v.status ? ` --status ${v.status}` : ''}${v.type ? ` --type ${v.type}` : ''}  (or --all)`);
  return 0;
}

function describeTask(t: any, io: Io): void {
  const row = (label: string, value: string) => io.out(`${label.padEnd(12)}${value}`);
  io.out(`${t.id}  ${t.type}@${t.type_version}`);
  row('status', `${t.status} (state ${t.state}, version ${t.version})${t.cancel_requested_at ? `, cancel requested ${shortTime(t.cancel_requested_at)}` : ''}`);
  if (t.progress) row('progress', `${progressBar(t.progress.current, t.progress.total)}  ${progressText(t.progress)}`);
  if (t.step?.name) row('step', `${t.step.index + 1}/${t.step.total} ${t.step.name}`);
  row('created', `${shortTime(t.created_at)} by ${t.created_by}`);
  row('updated', shortTime(t.updated_at));
  if (t.terminal_at) row('finished', shortTime(t.terminal_at));
  if (t.input !== undefined) row('input', JSON.stringify(t.input));
  if (t.input_request) {
    const q = t.input_request;
    row('question', `${typeof q.question === 'string' ? q.question : JSON.stringify(q.question)}`);
    row('', `key ${q.key}, answer version ${q.version}, deadline ${shortTime(q.deadline_at)} (then ${q.on_deadline})`);
    row('', `schema ${schemaSummary(q.schema)}`);
    if (q.context !== null && q.context !== undefined) row('', `context ${JSON.stringify(q.context)}`);
    row('', `answer: belay tasks answer ${t.id} ${shellQuote(JSON.stringify(exampleValue(q.schema)))}`);
  }
  if (t.error) row('error', `${t.error.code}: ${t.error.message}${t.error.details ? ` ${JSON.stringify(t.error.details)}` : ''}`);
  for (const a of t.artifacts ?? []) row('artifact', `${a.name} (${a.media_type})`);
  if (t.result_available) row('result', `GET ${t.result_url}`);
  if (t.operator) {
    const o = t.operator;
    row('lease', o.lease_owner ? `${o.lease_owner} until ${shortTime(o.lease_until)}` : 'none');
    row('fence', String(o.fence));
    row('attempts', String(o.attempts));
    row('wake at', o.wake_at ? shortTime(o.wake_at) : 'none');
    row('next seq', String(o.next_seq));
    row('checkpoint', JSON.stringify(o.checkpoint));
  }
}

async function show(client: RestClient, id: string, v: Values, io: Io): Promise<number> {
  const task = (await client.get(path(id, v.operator ? '?view=operator' : ''))).body;
  if (v.json) io.out(json(task));
  else describeTask(task, io);
  return 0;
}

function eventLine(e: Record<string, any>): string {
  const parts: string[] = [];
  const step = e.completed_step ?? e.step_name;
  if (step) parts.push(`[${step}]`);
  if (e.progress) parts.push(progressText(e.progress));
  if (e.question) parts.push(typeof e.question === 'string' ? e.question : JSON.stringify(e.question));
  if (e.reason) parts.push(`reason: ${e.reason}`);
  if (e.error) parts.push(`${e.error.code}: ${e.error.message}`);
  if (e.kind === 'input_received') parts.push(`key ${e.key}`);
  if (e.kind === 'retry_scheduled' && e.retry_at) parts.push(`retry at ${shortTime(e.retry_at)}`);
  return `#${String(e.seq).padEnd(4)} ${shortTime(e.at)}  ${String(e.kind).padEnd(15)} ${parts.filter(Boolean).join('  ')}`.trimEnd();
}

async function events(client: RestClient, id: string, v: Values, io: Io): Promise<number> {
  let after = v.after === undefined ? 0 : parseIntSetting(v.after, '--after', 0);
  const all: any[] = [];
  for (;;) {
    const page = (await client.get<{ events: any[]; next_after: number; has_more: boolean }>(path(id, `/events?after=${after}&limit=1000`))).body;
    all.push(...page.events);
    after = page.next_after;
    if (!page.has_more) break;
  }
  if (v.json) io.out(json({ events: all, next_after: after }));
  else if (all.length === 0) io.out('no events');
  else for (const e of all) io.out(eventLine(e));
  return 0;
}

/**
 * `watch` and `events --follow`: the SSE stream, reconnecting with Last-Event-ID after any drop (a server restart,
 * a proxy timeout, a network blip) until the task ends or the server stays unreachable for `--reconnect-timeout`.
 * Every event is shown once, in order.
 */
async function follow(client: RestClient, id: string, v: Values, io: Io, bar: boolean): Promise<number> {
  let last = v.after === undefined ? 0 : parseIntSetting(v.after, '--after', 0);
  const giveUpMs = (v['reconnect-timeout'] === undefined ? 300 : parseIntSetting(v['reconnect-timeout'], '--reconnect-timeout', 0)) * 1000;
  // Fail fast on a wrong id, key or URL before streaming; this also gives the starting state for the bar.
  let task = (await client.get(path(id))).body;
  const view = new WatchView(io, task, bar && !v.json);
  view.header();
  if (bar && v.after === undefined) {
    // A watch starts from now: the bar shows the current state, and the stream continues after the last event.
    for (;;) {
      const page = (await client.get<{ events: unknown[]; next_after: number; has_more: boolean }>(path(id, `/events?after=${last}&limit=1000`))).body;
      last = page.next_after;
      if (!page.has_more) break;
    }
    if (TERMINAL_STATUSES.has(task.status)) return view.finish(task.status, id);
    view.current();
  }
  let failingSince: number | null = null;
  let delay = 250;
  for (;;) {
    let reason = 'the server ended the stream';
    try {
      const onOpen = () => {
        if (failingSince !== null) io.err(`reconnected; resuming after event #${last}`);
        failingSince = null;
        delay = 250;
      };
      for await (const e of client.eventStream(id, last, { onOpen })) {
        if (e.id <= last) continue;
        last = e.id;
        if (v.json) io.out(JSON.stringify(e.data));
        else view.event(e);
        if (TERMINAL_EVENTS.has(e.event)) return view.finish(e.event === 'completed' ? 'completed' : e.event === 'failed' ? 'failed' : 'cancelled', id);
      }
    } catch (e) {
      if (e instanceof ApiError && e.status < 500 && e.status !== 429) throw e;
      if (!(e instanceof ApiError) && !(e instanceof ServerUnreachable)) throw e;
      reason = e instanceof ServerUnreachable ? e.reason : e.message;
    }
    // The stream ended without a terminal event: either the task had already ended before `last`, or the server went away.
    try {
      task = (await client.get(path(id))).body;
      if (TERMINAL_STATUSES.has(task.status)) {
        const tail = await client.get<{ events: any[] }>(path(id, `/events?after=${last}&limit=1000`));
        if (tail.body.events.length === 0) return view.finish(task.status, id);
      }
    } catch (e) {
      if (e instanceof ApiError && e.status < 500 && e.status !== 429) throw e;
      if (!(e instanceof ApiError) && !(e instanceof ServerUnreachable)) throw e;
      reason = e instanceof ServerUnreachable ? e.reason : e.message;
    }
    failingSince ??= Date.now();
    if (Date.now() - failingSince > giveUpMs) throw new ServerUnreachable(client.baseUrl, `${reason}; gave up after ${giveUpMs / 1000} s (--reconnect-timeout)`);
    view.interrupt();
    io.err(`connection lost (${reason}); reconnecting after event #${last} in ${delay} ms`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

/** The progress line of `watch`: redrawn in place on a terminal, one line per change otherwise. */
class WatchView {
  private status: string;
  private progress: ProgressLike | null;
  private step: string;
  private lastLine = '';
  private drawn = false;

  constructor(
    private readonly io: Io,
    private readonly task: any,
    private readonly bar: boolean,
  ) {
    this.status = task.status;
    this.progress = task.progress ?? null;
    this.step = task.step?.name ? `${task.step.index + 1}/${task.step.total} ${task.step.name}` : '';
  }

  /** The task as it is now (before any streamed event), with its pending question. */
  current(): void {
    this.draw();
    const q = this.task.input_request;
    if (q) this.question(q.question, q.schema);
  }

  private question(text: unknown, schema: any): void {
    this.interrupt();
    this.io.out(`? ${typeof text === 'string' ? text : JSON.stringify(text)}  (schema ${schemaSummary(schema)})`);
    this.io.out(`  answer with: belay tasks answer ${this.task.id} ${shellQuote(JSON.stringify(exampleValue(schema)))}`);
  }

  header(): void {
    if (this.bar) this.io.out(`watching ${this.task.id} (${this.task.type}@${this.task.type_version}); Ctrl-C stops watching, not the task`);
  }

  private line(): string {
    return `${progressBar(this.progress?.current, this.progress?.total)}  ${this.status.padEnd(14)} ${[this.step, progressText(this.progress)].filter(Boolean).join('  ')}`.trimEnd();
  }

  private draw(): void {
    const line = this.line();
    if (line === this.lastLine) return;
    this.lastLine = line;
    if (this.io.isTty) {
      process.stdout.write(`\r\x1b[2K${line}`);
      this.drawn = true;
    } else this.io.out(line);
  }

  /** Ends a redrawn line before other output. */
  interrupt(): void {
    if (this.drawn) process.stdout.write('\n');
    this.drawn = false;
    this.lastLine = '';
  }

  event(e: SseEvent): void {
    if (!this.bar) {
      this.io.out(eventLine(e.data));
      return;
    }
    const d = e.data as Record<string, any>;
    const state = typeof d.state === 'string' ? d.state : null;
    if (state) this.status = state === 'submitted' ? 'queued' : state === 'canceled' ? 'cancelled' : state === 'auth_required' ? 'input_required' : state;
    if (d.progress) this.progress = d.progress as ProgressLike;
    if (typeof d.step_name === 'string' || typeof d.step === 'number') {
      const total = typeof d.steps_total === 'number' ? d.steps_total : this.task.step?.total;
      const index = typeof d.step === 'number' ? d.step : null;
      if (typeof d.step_name === 'string' && index !== null) this.step = `${index + 1}/${total} ${d.step_name}`;
    }
    if (e.event === 'input_required') {
      this.draw();
      this.question(d.question, d.schema);
      return;
    }
    if (e.event === 'cancel_requested') {
      this.interrupt();
      this.io.out(`cancellation requested${d.reason ? ` (${d.reason})` : ''}; waiting for the worker to stop`);
    }
    if (e.event === 'retry_scheduled') {
      this.interrupt();
      this.io.out(`attempt failed; retry scheduled${d.retry_at ? ` at ${shortTime(d.retry_at)}` : ''}${d.error ? `: ${d.error.message}` : ''}`);
    }
    if (e.event === 'failed' && d.error) {
      this.draw();
      this.interrupt();
      this.io.out(`error: ${d.error.code}: ${d.error.message}`);
    }
    this.draw();
  }

  finish(status: string, id: string): number {
    if (this.bar) {
      this.status = status;
      this.draw();
      this.interrupt();
      this.io.out(status === 'completed' ? `completed; result: belay tasks show ${id}` : `${status}: belay tasks show ${id}`);
    }
    return status === 'completed' ? 0 : 3;
  }
}

function parseAnswer(text: string, from: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${from} is not valid JSON (${(e as Error).message}); quote it for the shell, e.g. '{"approved": true}'`);
  }
}

async function answer(client: RestClient, id: string, positional: string | undefined, v: Values, io: Io): Promise<number> {
  const sources = [positional !== undefined, v.answer !== undefined, v['answer-file'] !== undefined].filter(Boolean).length;
  if (sources === 0) throw new UsageError('"tasks answer" needs the answer as JSON: belay tasks answer <id> \'{"approved": true}\'', TASKS_USAGE);
  if (sources > 1) throw new UsageError('give the answer once: as an argument, --answer or --answer-file');
  let value: unknown;
  if (v['answer-file'] !== undefined) {
    const file = v['answer-file'];
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read --answer-file ${file}: ${(e as Error).message}`);
    }
    value = parseAnswer(text, `--answer-file ${file}`);
  } else value = parseAnswer((positional ?? v.answer)!, positional !== undefined ? 'the answer' : '--answer');
  let version: number;
  if (v.version !== undefined) version = parseIntSetting(v.version, '--version', 1);
  else {
    const task = (await client.get(path(id))).body;
    if (!task.input_request) {
      io.err(`belay: task ${id} is ${task.status}, not waiting for input`);
      return 1;
    }
    version = task.input_request.version;
  }
  const reply = await client.post(path(id, '/input'), { answer: value, version, ...(v.key ? { key: v.key } : {}) });
  if (v.json) io.out(json(reply.body));
  else io.out(`answered ${id}: now ${reply.body.status} (version ${reply.body.version})`);
  return 0;
}

async function cancel(client: RestClient, id: string, v: Values, io: Io): Promise<number> {
  const reply = await client.post(path(id, '/cancellation'), v.reason !== undefined ? { reason: v.reason } : undefined);
  const t = reply.body;
  if (v.json) io.out(json(t));
  else {
    const what: Record<string, string> = {
      canceled: 'cancelled',
      requested: 'cancellation requested; the worker stops before its next side effect',
      already_requested: 'cancellation was already requested; the worker is stopping',
      already_terminal: `already finished (${t.status}); nothing to cancel`,
    };
    io.out(`${id}: ${what[t.cancellation] ?? t.cancellation} (status ${t.status})`);
    const applied = t.error?.details?.effects_applied;
    if (Array.isArray(applied) && applied.length) io.out(`effects already applied: ${applied.length}`);
  }
  return 0;
}

async function retry(client: RestClient, id: string, v: Values, io: Io): Promise<number> {
  const attempt = v.attempt === undefined ? 1 : parseIntSetting(v.attempt, '--attempt', 1);
  const old = (await client.get(path(id))).body;
  if (!TERMINAL_STATUSES.has(old.status)) {
    io.err(`belay: task ${id} is ${old.status}; only a finished task can be retried (cancel it first: belay tasks cancel ${id})`);
    return 1;
  }
  if (old.status === 'completed' && !v.force) {
    io.err(`belay: task ${id} completed; pass --force to run its input again as a new task`);
    return 1;
  }
  if (old.input === undefined) throw new Error('the server did not return the task input (it needs a Belay server with `input` on GET /v1/agent-tasks/{id})');
  const key = `retry:${id}:${attempt}`;
  const reply = await client.post(
    '/v1/agent-tasks',
    { type: old.type, input: old.input, ...(old.context_id ? { context_id: old.context_id } : {}), ...(old.callback_url ? { callback_url: old.callback_url } : {}) },
    { 'idempotency-key': key },
  );
  const replayed = reply.headers.get('idempotency-replayed') === 'true';
  if (v.json) io.out(json({ retried_from: id, attempt, idempotency_key: key, replayed, task: reply.body }));
  else {
    io.out(reply.body.id);
    io.err(
      replayed
        ? `${id} was already retried as ${reply.body.id} (attempt ${attempt}); pass --attempt ${attempt + 1} to start another`
        : `retried ${id} as ${reply.body.id} (${old.type}, same input, idempotency key ${key})`,
    );
  }
  return 0;
}
