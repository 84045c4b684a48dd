/**
 * The web dashboard end to end in a REAL headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core;
 * no browser is ever downloaded) against a real `belay serve` process. If Chromium is missing or cannot start, these
 * tests FAIL: `.ci/run` installs it. Screenshots go to test-output/dashboard/ (not committed).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/gate.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';

const CHROMIUM = process.env.BELAY_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = fileURLToPath(new URL('../../test-output/dashboard/', import.meta.url));
const ADMIN = 'key-dash-admin-0123456789abcdef';
const KEYS = [`${ADMIN}=acme:ops:admin`];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('dashboard in headless Chromium', () => {
  let dir: string;
  let db: string;
  let port: number;
  let server: ServerProcess | null = null;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[];

  const startServer = async () => {
    server = spawnServer({ db, apiKeys: KEYS, workers: 2, leaseMs: 1000, port });
    base = await server.url;
  };
  const stopServer = async () => {
    if (!server) return;
    server.child.kill('SIGKILL');
    await server.exited;
    server = null;
  };

  async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return res.json();
  }
  const createTask = async (type: string, input: Record<string, unknown>) => (await api('POST', '/v1/agent-tasks', { type, input }, { 'idempotency-key': `e2e-${Math.random()}` })).id as string;
  const serverSeqs = async (id: string) => ((await api('GET', `/v1/agent-tasks/${id}/events?limit=1000`)).events as Array<{ seq: number }>).map((e) => e.seq);
  // Page-side code is given as strings or `any`: the browser's DOM types are not part of this Node program.
  const timelineSeqs = (p: Page) => p.$$eval('#timeline [data-seq]', (items: any[]) => items.map((li) => Number(li.dataset.seq)));
  const dataOf = (p: Page, selector: string, key: string) => p.$eval(selector, (e: any, k: string) => (e.dataset[k] as string | undefined) ?? null, key);
  // Functions, not strings: the page's Content-Security-Policy forbids eval, and the tests keep it on.
  const until = (p: Page, fn: (arg: any) => unknown, arg: unknown = null, timeout = 30_000) => p.waitForFunction(fn, arg, { timeout });
  const statusIs = (p: Page, status: string, timeout = 30_000) => until(p, (st) => (globalThis as any).document.getElementById('main')?.dataset.taskStatus === st, status, timeout);
  const lastSeqAtLeast = (p: Page, n: number, timeout = 20_000) => until(p, (min) => Number((globalThis as any).document.getElementById('main')?.dataset.lastSeq || 0) >= min, n, timeout);
  const lastKindIs = (p: Page, kind: string) => until(p, (k) => (globalThis as any).document.querySelector('#timeline li:last-child')?.getAttribute('data-kind') === k, kind);
  const shot = (name: string, fullPage = false) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'belay-dash-'));
    db = join(dir, 'belay.db');
    port = await freePort();
    await startServer();
    // No skip: a missing or broken Chromium fails the suite.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await stopServer();
    rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|net::ERR/.test(m.text())) pageErrors.push(m.text());
    });
    // The link `belay serve` prints: the key rides in the fragment and is kept in localStorage.
    await page.goto(`${base}/dashboard/#key=${ADMIN}`);
    await page.waitForSelector('table.tasks');
    expect(page.url()).not.toContain(ADMIN);
  });

  afterEach(async () => {
    await context.close();
    expect(pageErrors).toEqual([]);
  });

  it('start an access review from a generated form, watch progress live, answer the approval question, see completion', async () => {
    await page.click('a[href="#/new"]');
    await page.waitForSelector('#new-task-form');
    await page.selectOption('#task-type', 'access-review');
    // The form is generated from the task type's input JSON Schema (integers with their bounds and defaults).
    await page.waitForSelector('#new-task-form input[name="systems"][type="number"][min="1"][max="1000"]');
    expect(await page.inputValue('input[name="systems"]')).toBe('40');
    await page.fill('input[name="systems"]', '0');
    await page.click('#new-task-form button[type="submit"]');
    expect(await page.textContent('[data-path="systems"] .field-error')).toBe('must be ≥ 1');
    await page.fill('input[name="systems"]', '6');
    await page.fill('input[name="revocations"]', '2');
    await page.fill('input[name="stepDelayMs"]', '350');
    await shot('01-new-task-form');
    await page.click('#new-task-form button[type="submit"]');
    await page.waitForURL(/#\/tasks\/task_/);
    const id = decodeURIComponent(/#\/tasks\/(.+)$/.exec(page.url())![1]!);
    await page.evaluate(() => ((globalThis as any).__sameDocument = true));

    // Live progress: the bar changes several times with no reload, driven by the event stream.
    const seen = new Set<string>();
    await eventually(
      async () => {
        const p = await page.$eval('#task-progress [role="progressbar"]', (e: any) => `${e.dataset.current}/${e.dataset.total}`).catch(() => null);
        if (p) seen.add(p);
        return (await page.$('#answer-form')) !== null;
      },
      30_000,
      40,
    );
    expect(seen.size, [...seen].join(' ')).toBeGreaterThanOrEqual(4);
    expect(await page.textContent('#stream-state')).toBe('live');
    await shot('02-access-review-question');

    // The answer form is generated from the question's JSON Schema: a required boolean and an array of strings.
    expect(await page.getAttribute('#answer-form input[name="approved"]', 'type')).toBe('checkbox');
    expect(await page.$('#answer-form textarea[name="keep"]')).not.toBeNull();
    expect(await page.textContent('#question .question-text')).toBe('Approve revoking 2 stale grants?');
    await page.check('#answer-form input[name="approved"]');
    await page.click('#submit-answer');
    await statusIs(page, 'completed');
    await page.waitForSelector('#artifacts li[data-name="access-review-report"]');
    await until(page, () => (globalThis as any).document.querySelectorAll('#effects-table tr[data-status="applied"]').length === 2);
    expect(await page.textContent('#effects-count')).toBe('2 applied');
    expect(await page.evaluate(() => (globalThis as any).__sameDocument)).toBe(true);
    expect(await page.textContent('.head-actions .badge')).toBe('completed');
    expect(await page.$('#cancel-task')).toBeNull();
    // Operator facts come from ?view=operator.
    expect(Number(await page.textContent('#fence'))).toBeGreaterThanOrEqual(1);
    expect(await page.textContent('#op-version')).toBe(String((await api('GET', `/v1/agent-tasks/${id}`)).version));
    await lastKindIs(page, 'completed');
    expect(await timelineSeqs(page)).toEqual(await serverSeqs(id));
    await shot('03-access-review-completed', true);
    const result = await api('GET', `/v1/agent-tasks/${id}/result`);
    expect(result).toMatchObject({ status: 'completed', result: { systems_reviewed: 6, revocations_applied: 2 } });

    // The list shows it, and its status filter works.
    await page.click('a[href="#/tasks"]');
    await page.waitForSelector(`tr[data-id="${id}"][data-status="completed"]`);
    await page.selectOption('#filter-status', 'input_required');
    await page.waitForURL(/status=input_required/);
    await page.waitForSelector('td.empty');
    expect(await page.$(`tr[data-id="${id}"]`)).toBeNull();
  }, 90_000);

  it('the task list shows state and progress live', async () => {
    // Long enough for several 2 s list refreshes even on a loaded machine.
    const id = await createTask('synthetic', { steps: 40, stepMs: 200 });
    const states = new Set<string>();
    const progress = new Set<string>();
    await eventually(
      async () => {
        const row = await page.$(`tr[data-id="${id}"]`);
        if (!row) return false;
        states.add((await row.getAttribute('data-status'))!);
        progress.add((await row.$eval('[role="progressbar"]', (e: any) => (e.dataset.current as string | undefined) ?? '')) || '-');
        if (states.has('working') && progress.size === 2) await shot('04-task-list-live');
        return states.has('completed');
      },
      30_000,
      100,
    );
    expect(states.has('working')).toBe(true);
    expect(progress.size, [...progress].join(',')).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('cancel a running task from its page', async () => {
    const id = await createTask('synthetic', { steps: 400, stepMs: 50 });
    await page.goto(`${base}/dashboard/#/tasks/${id}`);
    await until(page, () => Number((globalThis as any).document.querySelector('#task-progress [role="progressbar"]')?.getAttribute('data-current') || 0) >= 3, null, 20_000);
    page.once('dialog', (d) => void d.accept());
    await page.click('#cancel-task');
    await statusIs(page, 'cancelled', 20_000);
    await page.waitForSelector('#timeline [data-kind="canceled"]');
    const kinds = await page.$$eval('#timeline [data-kind]', (items) => items.map((li) => li.getAttribute('data-kind')));
    expect(kinds).toContain('cancel_requested');
    expect(await page.textContent('#outcome')).toContain('CANCELLED');
    const task = await api('GET', `/v1/agent-tasks/${id}`);
    expect(task.status).toBe('cancelled');
    const applied = (task.error.details.effects_applied as string[]).length;
    await until(page, (n) => (globalThis as any).document.getElementById('effects-count')?.textContent === `${n} applied`, applied);
    expect(applied).toBeLessThan(400);
    await shot('05-cancelled', true);
  }, 60_000);

  it('reload the page mid-task: the timeline resumes after its last event (Last-Event-ID) with no gap and no repeat', async () => {
    const id = await createTask('synthetic', { steps: 40, stepMs: 150 });
    await page.goto(`${base}/dashboard/#/tasks/${id}`);
    await lastSeqAtLeast(page, 6);
    const streamRequests: Array<string | undefined> = [];
    page.on('request', (r) => {
      if (r.url().endsWith(`/v1/agent-tasks/${id}/events`)) streamRequests.push(r.headers()['last-event-id']);
    });
    await page.reload();
    await page.waitForSelector('#timeline [data-seq]');
    const afterReload = await timelineSeqs(page);
    expect(afterReload[0]).toBe(1);
    await eventually(async () => streamRequests.length > 0, 10_000);
    expect(Number(streamRequests[0])).toBeGreaterThanOrEqual(6);
    await shot('06-reloaded-mid-task');
    await statusIs(page, 'completed');
    await lastKindIs(page, 'completed');
    const seqs = await timelineSeqs(page);
    expect(seqs).toEqual(await serverSeqs(id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  }, 60_000);

  it('a server restart under an open task page: the stream reconnects with Last-Event-ID and the timeline has no gap', async () => {
    const id = await createTask('synthetic', { steps: 40, stepMs: 150 });
    await page.goto(`${base}/dashboard/#/tasks/${id}`);
    await lastSeqAtLeast(page, 5);
    await stopServer();
    await until(page, () => (globalThis as any).document.getElementById('stream-state')?.dataset.state === 'reconnecting', null, 10_000);
    await shot('07-server-down-reconnecting');
    await startServer();
    await statusIs(page, 'completed', 40_000);
    await lastKindIs(page, 'completed');
    expect(Number(await dataOf(page, '#main', 'streamRequests'))).toBeGreaterThanOrEqual(2);
    const seqs = await timelineSeqs(page);
    expect(seqs).toEqual(await serverSeqs(id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(await dataOf(page, '#main', 'taskStatus')).toBe('completed');
  }, 90_000);

  it('without a key the dashboard asks for one, and a refused key says so', async () => {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await fresh.newPage();
    try {
      await p.goto(`${base}/dashboard/`);
      await p.waitForSelector('#api-key');
      await p.fill('#api-key', 'key-not-valid-0123456789abcdef');
      await p.click('button[type="submit"]');
      await p.waitForSelector('text=The server refused that key (401)');
      await p.fill('#api-key', ADMIN);
      await p.click('button[type="submit"]');
      await p.waitForSelector('table.tasks');
    } finally {
      await fresh.close();
    }
  }, 30_000);
});
