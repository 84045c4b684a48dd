/**
 * The operator CLI as a user runs it: real `node bin/belay.js` processes against a real `belay serve` process, over
 * HTTP only. Every command, its --json output, bad input (exit 2 with a message naming the value), a server that
 * is down (exit 1 with a hint), and a server restart under `tasks watch`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli, type CliResult } from '../helpers/cli-process.js';
import { eventually } from '../helpers/gate.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';

const ADMIN = 'key-cli-admin-0123456789abcdef';
const ALICE = 'key-cli-alice-0123456789abcdef';
const KEYS = [`${ADMIN}=acme:ops:admin`, `${ALICE}=acme:alice`];

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function json(r: CliResult): any {
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

async function stop(p: ServerProcess | null): Promise<void> {
  if (!p || p.child.exitCode !== null) return;
  p.child.kill('SIGKILL');
  await p.exited;
}

describe('belay CLI', () => {
  let dir: string;
  let db: string;
  let server: ServerProcess | null = null;
  let url: string;
  /** Runs the CLI in an empty working directory, against the test server as the admin unless told otherwise. */
  const cli = (args: string[], env: Record<string, string> = {}, timeoutMs?: number) => runCli(args, { cwd: dir, env: { BELAY_URL: url, BELAY_API_KEY: ADMIN, ...env }, ...(timeoutMs ? { timeoutMs } : {}) });

  async function create(type: string, input: Record<string, unknown>, key = ADMIN): Promise<string> {
    const res = await fetch(`${url}/v1/agent-tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `k-${Math.random()}` },
      body: JSON.stringify({ type, input }),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: string }).id;
  }

  async function status(id: string): Promise<any> {
    const res = await fetch(`${url}/v1/agent-tasks/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return res.json();
  }

  const waitStatus = (id: string, statuses: string[], timeoutMs = 20_000) => eventually(async () => ((await status(id)).status as string) && statuses.includes((await status(id)).status), timeoutMs, 50);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belay-cli-'));
    db = join(dir, 'server.db');
    server = spawnServer({ db, apiKeys: KEYS, workers: 2, leaseMs: 1000 });
    url = await server.url;
  });

  afterAll(async () => {
    await stop(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('tasks list, show and events print tables and --json documents', async () => {
    const a = await create('synthetic', { steps: 2 });
    const b = await create('access-review', { systems: 2, revocations: 1 });
    await waitStatus(a, ['completed']);
    await waitStatus(b, ['input_required']);

    const table = await cli(['tasks', 'list']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+TYPE\s+STATUS\s+PROGRESS\s+STEP\s+CREATED/);
    expect(table.stdout).toContain(a);
    expect(table.stdout).toMatch(new RegExp(`${b}\\s+access-review@1\\s+input_required`));

    const listed = json(await cli(['tasks', 'list', '--json', '--status', 'completed', '--type', 'synthetic']));
    expect(listed.tasks.map((t: { id: string }) => t.id)).toContain(a);
    expect(listed.tasks.every((t: { status: string }) => t.status === 'completed')).toBe(true);
    const paged = json(await cli(['tasks', 'list', '--json', '--limit', '1', '--all']));
    expect(paged.tasks.length).toBeGreaterThanOrEqual(2);
    expect(paged.next_cursor).toBeNull();

    const shown = await cli(['tasks', 'show', b]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('status      input_required');
    expect(shown.stdout).toContain('question    Approve revoking 1 stale grants?');
    expect(shown.stdout).toContain(`answer: belay tasks answer ${b} '{"approved":true}'`);
    const operator = await cli(['tasks', 'show', b, '--operator']);
    expect(operator.stdout).toMatch(/fence\s+\d+/);
    expect(operator.stdout).toMatch(/checkpoint\s+\{/);
    const shownJson = json(await cli(['tasks', 'show', a, '--json']));
    expect(shownJson).toMatchObject({ id: a, status: 'completed', input: { steps: 2 } });
    // A member may not see the operator view: the server's 403 comes through with exit 1.
    const hers = await create('synthetic', { steps: 1 }, ALICE);
    const forbidden = await cli(['tasks', 'show', hers, '--operator'], { BELAY_API_KEY: ALICE });
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/403 forbidden/);

    const events = await cli(['tasks', 'events', a]);
    expect(events.stdout.split('\n')[0]).toMatch(/^#1\s+\S+ \S+\s+created/);
    expect(events.stdout).toMatch(/completed/);
    const eventsJson = json(await cli(['tasks', 'events', a, '--json', '--after', '1']));
    expect(eventsJson.events[0].seq).toBe(2);
    expect(eventsJson.events.at(-1).kind).toBe('completed');
  });

  it('tasks watch draws a progress bar from the event stream and exits 0 on completion; --json streams events', async () => {
    // The task waits for an answer until both watchers are connected, so the whole run is seen however slow they start.
    const id = await create('synthetic', { steps: 12, stepMs: 150, askAtStep: 0 });
    await waitStatus(id, ['input_required']);
    const env = { BELAY_URL: url, BELAY_API_KEY: ADMIN };
    const watching = spawnCli(['tasks', 'watch', id], { cwd: dir, env });
    const following = spawnCli(['tasks', 'events', id, '--follow', '--json'], { cwd: dir, env });
    await eventually(async () => watching.stdout().includes('? Continue past step 0?') && following.stdout().includes('"input_required"'), 30_000);
    expect(watching.stdout()).toContain(`answer with: belay tasks answer ${id} '{"ok":true}'`);
    expect((await cli(['tasks', 'answer', id, '{"ok": true}'])).code).toBe(0);
    const [bar, stream] = await Promise.all([watching.done, following.done]);
    expect(bar.code, bar.stderr).toBe(0);
    const percents = [...bar.stdout.matchAll(/\]\s+(\d+)%/g)].map((m) => Number(m[1]));
    expect(new Set(percents).size).toBeGreaterThanOrEqual(3);
    expect(percents.at(-1)).toBe(100);
    expect(bar.stdout).toMatch(/completed; result: belay tasks show/);
    const seqs = stream.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { seq: number }).seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // Watching a finished task returns at once with its outcome.
    const again = await cli(['tasks', 'watch', id]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/completed/);
  });

  it('tasks answer: bad JSON, a schema violation and a task that is not waiting are refused; a good answer resumes the task', async () => {
    const id = await create('access-review', { systems: 2, revocations: 1 });
    await waitStatus(id, ['input_required']);
    const notJson = await cli(['tasks', 'answer', id, '{approved: yes}']);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/the answer is not valid JSON/);
    const invalid = await cli(['tasks', 'answer', id, '--answer', '{"approved":"maybe"}']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/422 validation/);
    expect(invalid.stderr).toMatch(/approved/);
    const none = await cli(['tasks', 'answer', id]);
    expect(none.code).toBe(2);
    const stale = await cli(['tasks', 'answer', id, '{"approved":true}', '--version', '1']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/409 stale_version/);
    const answerFile = join(dir, 'answer.json');
    writeFileSync(answerFile, '{"approved": true}');
    const ok = await cli(['tasks', 'answer', id, '--answer-file', answerFile, '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(json(ok)).toMatchObject({ id, status: 'working' });
    await waitStatus(id, ['completed']);
    const late = await cli(['tasks', 'answer', id, '{"approved":true}']);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/is completed, not waiting for input/);
  });

  it('tasks cancel stops a running task; tasks retry starts a new task with the same input, once per attempt', async () => {
    const id = await create('synthetic', { steps: 200, stepMs: 50 });
    await eventually(async () => ((await status(id)).progress?.current ?? 0) >= 2, 20_000, 20);
    const notYet = await cli(['tasks', 'retry', id]);
    expect(notYet.code).toBe(1);
    expect(notYet.stderr).toMatch(/is working; only a finished task can be retried/);
    const cancel = await cli(['tasks', 'cancel', id, '--reason', 'wrong input']);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(/cancellation requested|cancelled/);
    const done = await eventually(async () => {
      const t = await status(id);
      return t.status === 'cancelled' ? t : null;
    });
    expect(done.error.code).toBe('CANCELLED');
    const twice = await cli(['tasks', 'cancel', id]);
    expect(twice.stdout).toMatch(/already finished \(cancelled\)/);

    const retried = await cli(['tasks', 'retry', id]);
    expect(retried.code, retried.stderr).toBe(0);
    const newId = retried.stdout.trim();
    expect(newId).toMatch(/^task_/);
    expect(newId).not.toBe(id);
    expect(retried.stderr).toContain(`retried ${id} as ${newId}`);
    const fresh = await status(newId);
    expect(fresh).toMatchObject({ type: 'synthetic', input: { steps: 200, stepMs: 50 }, context_id: done.context_id });
    // The same attempt again is the same request: no second task.
    const replay = json(await cli(['tasks', 'retry', id, '--json']));
    expect(replay).toMatchObject({ retried_from: id, attempt: 1, replayed: true, idempotency_key: `retry:${id}:1`, task: { id: newId } });
    const second = await cli(['tasks', 'retry', id, '--attempt', '2']);
    expect(second.stdout.trim()).not.toBe(newId);
    for (const t of [newId, second.stdout.trim()]) expect((await cli(['tasks', 'cancel', t])).code).toBe(0);
    // A completed task is retried only on purpose.
    const completed = await create('synthetic', { steps: 1 });
    await waitStatus(completed, ['completed']);
    expect((await cli(['tasks', 'retry', completed])).stderr).toMatch(/pass --force/);
    expect((await cli(['tasks', 'retry', completed, '--force'])).code).toBe(0);
  });

  it('bad usage and bad configuration exit 2 with a message naming the value', { timeout: 180_000 }, async () => {
    const cases: Array<[string[], RegExp, Record<string, string>?]> = [
      [['tasks', 'frobnicate'], /unknown tasks command "frobnicate"/],
      [['tasks', 'show'], /"tasks show" needs a task id/],
      [['tasks', 'show', 'a', 'b'], /unexpected argument "b"/],
      [['tasks', 'list', '--bogus'], /Unknown option '--bogus'/],
      [['tasks', 'list', '--reason', 'x'], /--reason does not apply to "tasks list"/],
      [['tasks', 'list', '--limit', '0'], /--limit must be an integer from 1 to 100, got "0"/],
      [['tasks', 'list', '--status', 'sleeping'], /--status "sleeping" is not a status/],
      [['tasks', 'list', '--created-after', 'yesterday'], /--created-after must be an ISO 8601 time/],
      [['tasks', 'list', '--url', 'ftp://example.com'], /--url must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/example.com"/],
      [['tasks', 'list'], /BELAY_URL must be an http:\/\/ or https:\/\/ URL, got "localhost:8787"/, { BELAY_URL: 'localhost:8787' }],
      [['tasks', 'watch', 'x', '--reconnect-timeout=-1'], /--reconnect-timeout must be a non-negative integer/],
      [['tasks', 'retry', 'x', '--attempt', 'two'], /--attempt must be an integer ≥ 1, got "two"/],
      [['tasks', 'list', '--config', 'missing.json'], /config file missing.json does not exist \(from --config\)/],
      [['doctor', '--grace', 'soon'], /--grace must be a non-negative integer, got "soon"/],
      [['serve', '--port', '70000'], /--port must be an integer from 0 to 65535, got "70000"/],
      [['worker', '--concurrency', '0'], /--concurrency must be an integer ≥ 1, got "0"/],
      [['migrate', '--synchronous', 'sometimes'], /--synchronous must be "full" or "normal", got "sometimes"/],
      [['frobnicate'], /unknown command "frobnicate"/],
    ];
    // Four at a time: each is a process start on a shared machine.
    for (let i = 0; i < cases.length; i += 4) {
      await Promise.all(
        cases.slice(i, i + 4).map(async ([args, message, env]) => {
          const r = await cli(args, env);
          expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
          expect(r.stderr, args.join(' ')).toMatch(message);
        }),
      );
    }
    // Config files: broken JSON, unknown keys and wrong types are named.
    const configs: Array<[string, RegExp]> = [
      ['{"url": ', /is not valid JSON/],
      ['{"ulr": "http://x"}', /unknown key "ulr" \(allowed: url, apiKey, db/],
      ['{"port": "8787"}', /"port": Invalid input: expected number, received string/],
      ['{"url": "nope"}', /config.json "url" must be an http:\/\/ or https:\/\/ URL, got "nope"/],
    ];
    for (const [text, message] of configs) {
      const file = join(dir, 'bad-config.json');
      writeFileSync(file, text);
      const r = await runCli(['tasks', 'list', '--config', file], { cwd: dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    // Help is not an error.
    const help = await cli(['tasks', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('retry <id>');
  });

  it('configuration: flags over environment over the config file; the default key file is found next to the database', async () => {
    const id = await create('synthetic', { steps: 1 }, ALICE);
    const work = mkdtempSync(join(tmpdir(), 'belay-cli-config-'));
    try {
      mkdirSync(join(work, '.belay'));
      writeFileSync(join(work, '.belay', 'config.json'), JSON.stringify({ url, apiKey: ALICE }));
      const fromFile = await runCli(['tasks', 'list', '--json'], { cwd: work });
      expect(fromFile.code, fromFile.stderr).toBe(0);
      const aliceTasks = json(fromFile).tasks as Array<{ id: string; created_by: string }>;
      expect(aliceTasks.map((t) => t.id)).toContain(id);
      expect(aliceTasks.every((t) => t.created_by === 'alice')).toBe(true);
      // The environment wins over the file, the flag over both.
      const envWins = await runCli(['tasks', 'list'], { cwd: work, env: { BELAY_API_KEY: 'key-nobody-0123456789abcdef' } });
      expect(envWins.code).toBe(1);
      expect(envWins.stderr).toMatch(/the server refused this API key.*\(401 unauthorized\)/);
      const flagWins = await runCli(['tasks', 'list', '--json', '--api-key', ADMIN], { cwd: work, env: { BELAY_API_KEY: 'key-nobody-0123456789abcdef' } });
      expect(flagWins.code, flagWins.stderr).toBe(0);
      expect(json(flagWins).tasks.map((t: { id: string }) => t.id)).toContain(id);
      const doctor = json(await runCli(['doctor', '--json', '--skip-store'], { cwd: work, env: { BELAY_URL: url } }));
      expect(doctor.config).toMatchObject({ file: '.belay/config.json', url_from: 'BELAY_URL', api_key_from: expect.stringMatching(/config\.json "apiKey"$/) as unknown });
      // Without any key setting, `belay serve`'s development key file next to the database is used.
      rmSync(join(work, '.belay', 'config.json'));
      writeFileSync(join(work, '.belay', 'api-key'), `${ALICE}\n`);
      const keyFile = await runCli(['tasks', 'list', '--json', '--url', url], { cwd: work });
      expect(json(keyFile).tasks.map((t: { id: string }) => t.id)).toEqual(aliceTasks.map((t) => t.id));
      const noKey = await runCli(['tasks', 'list', '--url', url, '--db', join(work, 'elsewhere', 'x.db')], { cwd: work });
      expect(noKey.code).toBe(1);
      expect(noKey.stderr).toMatch(/no API key configured/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('a server that is down: every command exits 1 with a hint; watch gives up after --reconnect-timeout', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    for (const args of [['tasks', 'list'], ['tasks', 'show', 'task_x'], ['tasks', 'events', 'task_x'], ['tasks', 'answer', 'task_x', '{}'], ['tasks', 'cancel', 'task_x'], ['tasks', 'retry', 'task_x']]) {
      const r = await cli(args, { BELAY_URL: down });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toContain(`cannot reach the Belay server at ${down} (ECONNREFUSED)`);
      expect(r.stderr).toContain('Set --url or BELAY_URL');
    }
    const unknown = await cli(['tasks', 'show', 'task_doesnotexist']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 not_found/);

    // watch: the server goes away after the first read and never comes back.
    const port = await closedPort();
    const temp = spawnServer({ db: join(dir, 'gone.db'), apiKeys: KEYS, workers: 0, port });
    const tempUrl = await temp.url;
    const id = await (async () => {
      const res = await fetch(`${tempUrl}/v1/agent-tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', 'idempotency-key': 'gone' },
        body: JSON.stringify({ type: 'synthetic', input: {} }),
      });
      return ((await res.json()) as { id: string }).id;
    })();
    const watch = spawnCli(['tasks', 'watch', id, '--reconnect-timeout', '1'], { cwd: dir, env: { BELAY_URL: tempUrl, BELAY_API_KEY: ADMIN } });
    await eventually(async () => watch.stdout().includes('queued'), 10_000);
    await stop(temp);
    const r = await watch.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/connection lost/);
    expect(r.stderr).toMatch(/gave up after 1 s \(--reconnect-timeout\)/);
  });

  it('tasks watch survives a server restart: it reconnects with Last-Event-ID and misses nothing', async () => {
    const port = await closedPort();
    const restartDb = join(dir, 'restart.db');
    let gateway: ServerProcess | null = spawnServer({ db: restartDb, apiKeys: KEYS, workers: 2, leaseMs: 1000, port });
    try {
      const base = await gateway.url;
      const res = await fetch(`${base}/v1/agent-tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', 'idempotency-key': 'restart' },
        body: JSON.stringify({ type: 'synthetic', input: { steps: 30, stepMs: 200, askAtStep: 0 } }),
      });
      const id = ((await res.json()) as { id: string }).id;
      const env = { BELAY_URL: base, BELAY_API_KEY: ADMIN };
      const watch = spawnCli(['tasks', 'watch', id], { cwd: dir, env, timeoutMs: 90_000 });
      const follow = spawnCli(['tasks', 'events', id, '--follow', '--json'], { cwd: dir, env, timeoutMs: 90_000 });
      // Both are connected before the work starts: the task waits for this answer.
      await eventually(async () => watch.stdout().includes('? Continue past step 0?') && follow.stdout().includes('"input_required"'), 30_000);
      expect((await cli(['tasks', 'answer', id, '{"ok": true}'], env)).code).toBe(0);
      const seen = () => Math.max(0, ...[...watch.stdout().matchAll(/\s(\d+)\/30/g)].map((m) => Number(m[1])));
      await eventually(async () => seen() >= 5, 20_000).catch((e: Error) => {
        throw new Error(`${e.message}: ${watch.stdout()} ${watch.stderr()}`);
      });
      expect(seen()).toBeLessThan(30);
      await stop(gateway);
      gateway = null;
      await eventually(async () => watch.stderr().includes('connection lost') && follow.stderr().includes('connection lost'), 10_000);
      await new Promise((r) => setTimeout(r, 500));
      gateway = spawnServer({ db: restartDb, apiKeys: KEYS, workers: 2, leaseMs: 1000, port });
      await gateway.url;
      const [w, f] = await Promise.all([watch.done, follow.done]);
      expect(w.code, w.stderr).toBe(0);
      expect(w.stderr).toMatch(/reconnected; resuming after event #\d+/);
      expect(w.stdout).toMatch(/\] 100%\s+completed/);
      expect(f.code, f.stderr).toBe(0);
      const seqs = f.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { seq: number }).seq);
      const all = ((await (await fetch(`${base}/v1/agent-tasks/${id}/events?limit=1000`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { events: Array<{ seq: number }> }).events.map((e) => e.seq);
      expect(seqs).toEqual(all);
      expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    } finally {
      await stop(gateway);
    }
  }, 90_000);

  it('serve prints the dashboard URL with its development key and serves the dashboard; migrate prints the schema version', async () => {
    const work = mkdtempSync(join(tmpdir(), 'belay-serve-'));
    const serve = spawnCli(['serve', '--port', '0', '--workers', '0', '--db', join(work, 'data', 'belay.db')], { cwd: work, timeoutMs: 30_000 });
    try {
      await eventually(async () => watchReady(serve.stdout()), 15_000);
      const out = serve.stdout();
      const key = /API key \(tenant "default", admin\): (\S+)/.exec(out)![1]!;
      const base = /READY (\S+)/.exec(out)![1]!;
      expect(out).toContain(`Dashboard: ${base}/dashboard/#key=${encodeURIComponent(key)}`);
      const page = await fetch(`${base}/dashboard/`);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(await page.text()).toContain('<script type="module" src="app.js">');
      expect((await fetch(`${base}/dashboard/app.js`)).headers.get('content-type')).toContain('text/javascript');
      const root = await fetch(`${base}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/dashboard/');
      for (const path of ['/dashboard/../package.json', '/dashboard/%2e%2e/package.json', '/dashboard/nope.js', '/dashboard/.hidden.js']) {
        expect((await fetch(`${base}${path}`)).status, path).toBe(404);
      }
      // The data stays behind the key.
      expect((await fetch(`${base}/v1/agent-tasks`)).status).toBe(401);
      // The CLI finds that key by itself (it sits next to the database).
      const listed = await runCli(['tasks', 'list', '--url', base, '--db', join(work, 'data', 'belay.db')], { cwd: work });
      expect(listed.code, listed.stderr).toBe(0);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.done;
    }
    const migrated = await runCli(['migrate', '--db', join(work, 'm.db'), '--json'], { cwd: work });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ schema_version: expect.any(Number) as unknown, dialect: 'sqlite' });
    rmSync(work, { recursive: true, force: true });
  });
});

function watchReady(out: string): boolean {
  return /READY \S+/.test(out);
}
