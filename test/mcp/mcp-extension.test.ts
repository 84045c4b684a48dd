/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) served next to 2025-11-25, and the
 * independent requester `@modelcontextprotocol/ext-tasks` on both revisions, over real sockets on both stores.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Client as ModernClient } from '@modelcontextprotocol/client';
import type { ApplicationInputRequest, ResolvedInputExchangeContext, TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { z } from 'zod';
import { TerminalError } from '../../src/core/errors.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { defineTaskType, type TaskTypeRegistry } from '../../src/runtime/task-type.js';
import type { Worker } from '../../src/runtime/worker.js';
import type { Store } from '../../src/store/port.js';
import { eventually } from '../helpers/gate.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { ALICE, MALLORY, MODERN, connectV2Client, extTasksSession, modernRpc, startGateway, startWorker, type Gateway } from './mcp-helpers.js';

const doomed = defineTaskType({
  name: 'doomed',
  version: 1,
  input: z.object({}),
  initialCheckpoint: () => ({}),
  steps: [
    {
      name: 'fail',
      run: async () => {
        throw new TerminalError('grant_not_found', 'System 7 has no such grant');
      },
    },
  ],
});

const ALICE_WHO = { tenant: 'acme', principal: 'alice' };

for (const kind of storesUnderTest()) {
  describe(`MCP tasks extension and ext-tasks on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let registry: TaskTypeRegistry;
    let downstream: InMemoryDownstream;
    let gw: Gateway;
    let worker: Worker;
    const cleanup: Array<() => Promise<unknown>> = [];

    async function modern(key = ALICE, url = gw.url, onElicit?: Parameters<typeof connectV2Client>[3]): Promise<ModernClient> {
      const c = await connectV2Client(url, key, 'modern', onElicit);
      cleanup.push(() => c.close());
      return c;
    }

    function session(client: ModernClient, onInput?: (req: ApplicationInputRequest, ctx: ResolvedInputExchangeContext) => unknown, url = gw.url, key = ALICE): TaskEnabledSession {
      const s = extTasksSession(client, url, key, onInput ? ((async (req: ApplicationInputRequest, ctx: ResolvedInputExchangeContext) => onInput(req, ctx)) as never) : undefined);
      cleanup.unshift(() => s.close());
      return s;
    }

    beforeEach(async () => {
      store = await stores.open();
      downstream = new InMemoryDownstream();
      registry = exampleRegistry(downstream).register(doomed);
      gw = await startGateway(store, registry);
      worker = startWorker(store, registry);
    });

    afterEach(async () => {
      for (const f of cleanup.splice(0)) await f().catch(() => undefined);
      await gw.close();
      await worker.stop(5000);
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('negotiates 2026-07-28 through server/discover and advertises the tasks extension', async () => {
      const c = await modern();
      expect(c.getProtocolEra()).toBe('modern');
      expect(c.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect(c.getServerCapabilities()?.extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name)).toContain('access-review');
      expect(tools.find((t) => t.name === 'synthetic')!.inputSchema).toMatchObject({ type: 'object', properties: { steps: { type: 'integer' } } });
    });

    it('with the extension a call becomes a task (resultType "task") and tasks/get inlines the result', async () => {
      const c = await modern();
      const s = session(c);
      const exec = await s.callTool('synthetic', { steps: 3, stepMs: 20 });
      expect(exec.kind).toBe('task');
      const { outcome } = await exec.settle();
      expect(outcome).toMatchObject({ status: 'completed', result: { structuredContent: { steps_done: 3 }, isError: false } });
      const taskId = exec.handle!.taskId;
      const raw = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId });
      expect(raw.body.result).toMatchObject({ resultType: 'complete', taskId, status: 'completed', ttlMs: 24 * 3600_000, result: { resultType: 'complete', structuredContent: { steps_done: 3 } } });
      const snap = await s.task(taskId).snapshot();
      expect(snap).toMatchObject({ taskId, status: 'completed' });
    });

    it('the access-review question is an input request of the task; tasks/update answers it through the service', async () => {
      const c = await modern();
      const asked: Array<{ req: ApplicationInputRequest; ctx: ResolvedInputExchangeContext }> = [];
      const s = session(c, (req, ctx) => {
        asked.push({ req, ctx });
        return { action: 'accept', content: { approved: true } };
      });
      const exec = await s.callTool('access-review', { systems: 2, revocations: 2 });
      const { outcome } = await exec.settle();
      expect(outcome).toMatchObject({ status: 'completed', result: { structuredContent: { revocations_applied: 2 } } });
      expect(asked).toHaveLength(1);
      expect(asked[0]!.req).toMatchObject({ kind: 'elicitation', params: { mode: 'form', requestedSchema: { properties: { approved: { type: 'boolean' } } } } });
      expect(asked[0]!.ctx).toMatchObject({ scope: 'task', delivery: 'task-update', taskId: exec.handle!.taskId, inputId: expect.stringMatching(/^approval@\d+$/) });
      expect(downstream.countByKind('revoke')).toBe(2);
    });

    it('tasks/update: a schema violation is -32602; a key that is no longer outstanding is acknowledged and ignored', async () => {
      const created = await modernRpc(gw.url, ALICE, 'tools/call', { name: 'access-review', arguments: { systems: 2, revocations: 1 } });
      const taskId = created.body.result.taskId as string;
      const waiting = await eventually(async () => {
        const r = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId });
        return r.body.result.status === 'input_required' ? r.body.result : null;
      }, 20_000);
      const key = Object.keys(waiting.inputRequests)[0]!;
      expect(waiting.inputRequests[key]).toMatchObject({ method: 'elicitation/create', params: { mode: 'form' } });
      const [qkey, version] = key.split('@');
      const bad = await modernRpc(gw.url, ALICE, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { approved: 'maybe' } } } });
      expect(bad.body.error).toMatchObject({ code: -32602, data: { code: 'validation' } });
      const stale = await modernRpc(gw.url, ALICE, 'tasks/update', { taskId, inputResponses: { [`${qkey}@${Number(version) - 1}`]: { action: 'accept', content: { approved: true } } } });
      expect(stale.body.result).toEqual({ resultType: 'complete' });
      expect((await gw.service.getTask(ALICE_WHO, taskId)).state).toBe('input_required');
      const ok = await modernRpc(gw.url, ALICE, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { approved: true } } } });
      expect(ok.body.result).toEqual({ resultType: 'complete' });
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, taskId)).state === 'completed', 20_000);
    });

    it('tasks/cancel is acknowledged and stops the work through the runtime', async () => {
      const c = await modern();
      const s = session(c);
      const exec = await s.callTool('synthetic', { steps: 1, stepMs: 20_000 });
      const taskId = exec.handle!.taskId;
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, taskId)).leaseOwner !== null, 10_000);
      const started = Date.now();
      await s.cancelTask(taskId);
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, taskId)).state === 'canceled', 10_000);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect((await s.task(taskId).snapshot()).status).toBe('cancelled');
      // Cancelling what already finished is still acknowledged (cancellation is cooperative).
      expect((await modernRpc(gw.url, ALICE, 'tasks/cancel', { taskId })).body.result).toEqual({ resultType: 'complete' });
    });

    it('a tool failure is a completed task with an isError result (the extension keeps failed for JSON-RPC errors)', async () => {
      const c = await modern();
      const exec = await session(c).callTool('doomed', {});
      const { outcome } = await exec.settle();
      expect(outcome).toMatchObject({ status: 'completed', result: { isError: true, structuredContent: { status: 'failed', error: { code: 'grant_not_found' } } } });
    });

    it('a serialized task reference resumes on another gateway after the first one stopped', async () => {
      const c = await modern();
      const exec = await session(c).callTool('access-review', { systems: 2, revocations: 1 });
      const taskId = exec.handle!.taskId;
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, taskId)).state === 'input_required', 20_000);
      let reference: unknown;
      if (exec.kind === 'task') await exec.handoff((r) => void (reference = r));
      const store2 = await stores.reopen();
      const gw2 = await startGateway(store2, registry);
      cleanup.push(async () => {
        await gw2.close();
        await store2.close();
      });
      await gw.close();
      const c2 = await modern(ALICE, gw2.url);
      const s2 = session(c2, () => ({ action: 'accept', content: { approved: true } }), gw2.url);
      const resumed = await s2.resumeTask({ ...(reference as object), endpointId: `belay:${gw2.url}` } as never);
      const { outcome } = await resumed.settle();
      expect(outcome).toMatchObject({ status: 'completed', result: { structuredContent: { revocations_applied: 1 } } });
    });

    it('a client without the extension is served too: the call is held and its question comes back as input_required (MRTR)', async () => {
      let asked = 0;
      const c = await modern(ALICE, gw.url, () => {
        asked += 1;
        return { action: 'accept', content: { approved: true } };
      });
      const result = await c.callTool({ name: 'access-review', arguments: { systems: 2, revocations: 1 } });
      expect(result).toMatchObject({ structuredContent: { systems_reviewed: 2, revocations_applied: 1 }, isError: false });
      expect(asked).toBe(1);
    });

    it('closing a held call (a client without the extension) cancels its task, as the revision defines for a cancelled request', async () => {
      const ctrl = new AbortController();
      const body = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'synthetic',
          arguments: { steps: 1, stepMs: 20_000 },
          _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' }, 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      };
      const res = await fetch(gw.url, {
        method: 'POST',
        signal: ctrl.signal,
        headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'synthetic' },
        body: JSON.stringify(body),
      });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const running = await eventually(async () => (await gw.service.listTasks(ALICE_WHO)).tasks.find((t) => t.leaseOwner !== null) ?? null, 10_000);
      ctrl.abort();
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, running.id)).state === 'canceled', 10_000);
    });

    it('wire errors: -32021 without the extension, 404 -32601 for removed methods, -32022, -32020, and -32602 for foreign or expired tasks', async () => {
      const created = await modernRpc(gw.url, ALICE, 'tools/call', { name: 'synthetic', arguments: {} });
      const taskId = created.body.result.taskId as string;
      const noExt = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId }, { extension: false });
      expect(noExt.status).toBe(400);
      expect(noExt.body.error).toEqual({ code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } });
      for (const method of ['tasks/list', 'tasks/result', 'no/such-method']) {
        const r = await modernRpc(gw.url, ALICE, method, { taskId });
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe(-32601);
      }
      const old = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId }, { version: '2099-01-01' });
      expect(old.status).toBe(400);
      expect(old.body.error).toMatchObject({ code: -32022, data: { supported: [MODERN, '2025-11-25'], requested: '2099-01-01' } });
      const mismatch = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId }, { headers: { 'mcp-name': 'task_other' } });
      expect(mismatch.status).toBe(400);
      expect(mismatch.body.error.code).toBe(-32020);
      const noVersionHeader = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId }, { headers: { 'mcp-protocol-version': '' } });
      expect(noVersionHeader.body.error.code).toBe(-32020);
      const missing = await modernRpc(gw.url, ALICE, 'tasks/get', { taskId: 'task_nope' });
      expect(missing.body.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found', data: { code: 'not_found', owner: 'caller', retryable: false } });
      for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
        const foreign = await modernRpc(gw.url, MALLORY, method, { taskId, inputResponses: {} });
        expect(foreign.body.error).toEqual(missing.body.error);
      }
      expect((await modernRpc(gw.url, ALICE, 'tools/call', { name: 'no-such-tool', arguments: {} })).body.error).toMatchObject({ code: -32602, message: 'Unknown tool: no-such-tool' });
      expect((await modernRpc(gw.url, ALICE, 'tools/call', { name: 'synthetic', arguments: { steps: 'x' } })).body.error).toMatchObject({ code: -32602, data: { code: 'validation' } });
      // A retention tombstone: "Task has expired".
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, taskId)).state === 'completed', 20_000);
      await store.expireTasks((await gw.service.getTask(ALICE_WHO, taskId)).expiresAt!, 10);
      expect((await modernRpc(gw.url, ALICE, 'tasks/get', { taskId })).body.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task has expired', data: { code: 'task_expired' } });
    });

    it('ext-tasks on 2025-11-25: calls as a task, answers the question from the session stream, lists and cancels', async () => {
      const c = await connectV2Client(gw.url, ALICE, 'legacy', undefined, true);
      cleanup.push(() => c.close());
      expect(c.getProtocolEra()).toBe('legacy');
      expect(c.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      await c.listTools();
      const asked: ResolvedInputExchangeContext[] = [];
      const s = session(c, (_req, ctx) => {
        asked.push(ctx);
        return { action: 'accept', content: { approved: true } };
      });
      const exec = await s.callTool('synthetic', { steps: 2 }, { task: { preference: 'require', retentionMs: 120_000 } });
      expect(exec.kind).toBe('task');
      const { outcome, lastTask } = await exec.settle();
      expect(outcome).toMatchObject({ status: 'completed', result: { structuredContent: { steps_done: 2 } } });
      expect(lastTask?.ttl).toBe(120_000);
      const review = await s.callTool('access-review', { systems: 2, revocations: 1 }, { task: { preference: 'require' } });
      expect((await review.settle()).outcome).toMatchObject({ status: 'completed', result: { structuredContent: { revocations_applied: 1 } } });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ taskId: review.handle!.taskId });
      const long = await s.callTool('synthetic', { steps: 1, stepMs: 20_000 }, { task: { preference: 'require' } });
      const page = await s.listTasks();
      expect(page.tasks.map((t) => t.taskId)).toEqual(expect.arrayContaining([exec.handle!.taskId, review.handle!.taskId, long.handle!.taskId]));
      await s.cancelTask(long.handle!.taskId);
      await eventually(async () => (await gw.service.getTask(ALICE_WHO, long.handle!.taskId)).state === 'canceled', 10_000);
    });
  });
}
