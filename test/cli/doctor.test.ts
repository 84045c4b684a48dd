/**
 * `belay doctor` on both stores, as real processes: stranded tasks found through the store's findStranded, schema
 * versions of the store and of the server compared, connectivity to both, and a refused key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli-process.js';
import { spawnServer } from '../helpers/server-process.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const ADMIN = 'key-doctor-admin-0123456789abcdef';

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

for (const kind of storesUnderTest()) {
  describe(`belay doctor on ${kind}`, () => {
    const stores = testStores(kind);
    afterAll(() => stores.teardown());

    it('reports stranded tasks, schema versions and connectivity; exit 1 on any failed check, 0 when all pass', async () => {
      await (await stores.open()).close();
      const db = stores.url();
      const cwd = mkdtempSync(join(tmpdir(), 'belay-doctor-'));
      // No workers: a queued task nobody claims is stranded once the grace period is over.
      const server = spawnServer({ db, apiKeys: [`${ADMIN}=acme:ops:admin`], workers: 0 });
      try {
        const url = await server.url;
        const res = await fetch(`${url}/v1/agent-tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', 'idempotency-key': 'stranded' },
          body: JSON.stringify({ type: 'synthetic', input: {} }),
        });
        const id = ((await res.json()) as { id: string }).id;
        await new Promise((r) => setTimeout(r, 50));
        const env = { BELAY_DB: db, BELAY_URL: url, BELAY_API_KEY: ADMIN };

        const sick = await runCli(['doctor', '--grace', '0', '--json'], { cwd, env });
        expect(sick.code, sick.stderr).toBe(1);
        const report = JSON.parse(sick.stdout);
        expect(report.ok).toBe(false);
        expect(report.store.stranded.map((t: { id: string }) => t.id)).toEqual([id]);
        expect(report.store.tasks_by_state).toMatchObject({ submitted: 1 });
        expect(report.server.schema_version).toBe(report.store.schema_version);
        expect(report.server.task_types).toContain('access-review@1');
        const status = Object.fromEntries(report.checks.map((c: { name: string; status: string }) => [c.name, c.status]));
        expect(status).toEqual({ config: 'ok', store: 'ok', tasks: 'ok', stranded: 'fail', server: 'ok', auth: 'ok' });
        const human = await runCli(['doctor', '--grace', '0'], { cwd, env });
        expect(human.stdout).toMatch(new RegExp(`FAIL  stranded  1 stranded: ${id} \\(submitted`));
        expect(human.stdout).toMatch(new RegExp(`ok {4}store {5}${kind} `));
        // Within the grace period the same task is not stranded.
        const patient = await runCli(['doctor'], { cwd, env });
        expect(patient.code, patient.stdout).toBe(0);
        expect(patient.stdout).toMatch(/all checks passed/);

        const badKey = await runCli(['doctor', '--json'], { cwd, env: { ...env, BELAY_API_KEY: 'key-wrong-0123456789abcdef' } });
        expect(badKey.code).toBe(1);
        expect(JSON.parse(badKey.stdout).checks.find((c: { name: string }) => c.name === 'auth')).toMatchObject({ status: 'fail', detail: expect.stringMatching(/refused this API key/) as unknown });

        const down = `http://127.0.0.1:${await closedPort()}`;
        const serverDown = await runCli(['doctor'], { cwd, env: { ...env, BELAY_URL: down } });
        expect(serverDown.code).toBe(1);
        expect(serverDown.stdout).toMatch(/FAIL {2}server\s+cannot reach the Belay server at .* \(ECONNREFUSED\)/);
        expect(serverDown.stdout).toMatch(/ok {4}store/);

        const missingStore = kind === 'sqlite' ? join(cwd, 'nothing-here.db') : `postgres://root@127.0.0.1:${await closedPort()}/nowhere`;
        const storeDown = await runCli(['doctor', '--json', '--skip-server', '--db', missingStore], { cwd, env, timeoutMs: 40_000 });
        expect(storeDown.code).toBe(1);
        const storeCheck = JSON.parse(storeDown.stdout).checks.find((c: { name: string }) => c.name === 'store');
        expect(storeCheck.status).toBe('fail');
        expect(storeCheck.detail).toMatch(kind === 'sqlite' ? /no SQLite database at/ : /cannot open postgres:\/\/root@127\.0\.0\.1:\d+\/nowhere/);
      } finally {
        server.child.kill('SIGKILL');
        await server.exited;
        rmSync(cwd, { recursive: true, force: true });
      }
    }, 90_000);
  });
}
