/**
 * The MCP front over real sockets on both stores, driven by the real `@modelcontextprotocol/sdk` 1.x client:
 * tools, task-augmented and plain calls, polling, elicitation for input, results, lists, cancellation, reconnects,
 * a second gateway on the same store, a gateway restart, tenancy, the exact -32602/-32601 errors, expiry, and
 * status notifications. The tasks extension and the independent ext-tasks client are in mcp-extension.test.ts.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  TaskStatusNotificationSchema,
  type ElicitRequest,
  type Task as McpTask,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { TerminalError } from '../../src/core/errors.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { inputRequestId } from '../../src/protocols/mcp/input-request.js';
import { defineTaskType, type TaskTypeRegistry } from '../../src/runtime/task-type.js';
import type { Worker } from '../../src/runtime/worker.js';
import type { Store } from '../../src/store/port.js';
import { eventually } from '../helpers/gate.js';
import { spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';
import { ALICE, BOB, KEYS, MALLORY, connectClient, rawSession, rpc, startGateway, startWorker, type Gateway } from './mcp-helpers.js';

const doomed = defineTaskType({
  name: 'doomed',
  version: 1,
  description: 'Fails at once (tests).',
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

/** The JSON-RPC error a client call rejects with. */
async function rpcError(p: Promise<unknown>): Promise<{ code: number; message: string; data?: any }> {
  try {
    await p;
  } catch (e) {
    const err = e as { code?: number; message: string; data?: unknown };
    return { code: err.code ?? NaN, message: err.message.replace(/^MCP error -?\d+: /, ''), data: err.data };
  }
  throw new Error('expected a JSON-RPC error');
}

for (const kind of storesUnderTest()) {
  describe(`MCP 2025-11-25 tasks on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let registry: TaskTypeRegistry;
    let downstream: InMemoryDownstream;
    let gw: Gateway;
    let worker: Worker;
    const clients: Client[] = [];
    const extra: Array<() => Promise<unknown>> = [];

    async function client(key = ALICE, options: Parameters<typeof connectClient>[2] = {}, url = gw.url): Promise<Client> {
      const c = (await connectClient(url, key, options)).client;
      clients.push(c);
      return c;
    }

    /** Creates a task with a raw task-augmented tools/call (no polling), returning the CreateTaskResult's task. */
    async function createTask(c: Client, name: string, args: Record<string, unknown>, ttl?: number): Promise<McpTask> {
      const r = await c.request({ method: 'tools/call', params: { name, arguments: args, task: ttl === undefined ? {} : { ttl } } }, CreateTaskResultSchema);
      return r.task;
    }

    async function waitStatus(c: Client, taskId: string, statuses: string[]): Promise<McpTask> {
      return eventually(async () => {
        const t = await c.experimental.tasks.getTask(taskId);
        return statuses.includes(t.status) ? t : null;
      }, 20_000);
    }

    beforeEach(async () => {
      store = await stores.open();
      downstream = new InMemoryDownstream();
      registry = exampleRegistry(downstream).register(doomed);
      gw = await startGateway(store, registry);
      worker = startWorker(store, registry);
    });

    afterEach(async () => {
      for (const c of clients.splice(0)) await c.close().catch(() => undefined);
      for (const f of extra.splice(0)) await f().catch(() => undefined);
      await gw.close();
      await worker.stop(5000);
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('lists every task type as a tool with optional task support and its input schema, and declares capabilities.tasks', async () => {
      const c = await client();
      expect(c.getServerCapabilities()?.tasks).toEqual({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name)).toEqual(['access-review', 'account-migration', 'agent-access-review', 'doomed', 'synthetic'].filter((n) => registry.list().some((t) => t.name === n)));
      for (const tool of tools) {
        expect(tool.execution).toEqual({ taskSupport: 'optional' });
        const { $schema: _s, ...schema } = registry.latest(tool.name).inputJsonSchema;
        expect(tool.inputSchema).toEqual({ ...schema, type: 'object' });
      }
    });

    it('a task-augmented call returns a task at once; tasks/get polls it; tasks/result returns the result with related-task metadata; the ttl is clamped', async () => {
      const c = await client();
      await c.listTools();
      const seen: string[] = [];
      let created: McpTask | undefined;
      let result: any;
      for await (const m of c.experimental.tasks.callToolStream({ name: 'synthetic', arguments: { steps: 3, stepMs: 30 } }, CallToolResultSchema, { task: { ttl: 1 } })) {
        seen.push(m.type);
        if (m.type === 'taskCreated') created = m.task;
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      expect(seen[0]).toBe('taskCreated');
      expect(seen).toContain('taskStatus');
      expect(seen.at(-1)).toBe('result');
      expect(created).toMatchObject({ status: 'working', ttl: 60_000 });
      expect(typeof created!.pollInterval).toBe('number');
      expect(result).toMatchObject({ structuredContent: { steps_done: 3 }, isError: false, _meta: { 'io.modelcontextprotocol/related-task': { taskId: created!.taskId } } });
      const polled = await c.experimental.tasks.getTask(created!.taskId);
      expect(polled).toMatchObject({ taskId: created!.taskId, status: 'completed', ttl: 60_000, createdAt: created!.createdAt });
      expect(polled._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
      expect(await c.experimental.tasks.getTaskResult(created!.taskId, CallToolResultSchema)).toEqual(result);
      // The same row through the service (what REST and A2A serve).
      expect((await gw.service.getTask({ tenant: 'acme', principal: 'alice', role: 'member' }, created!.taskId)).result).toEqual({ steps_done: 3 });
      // Above the maximum: clamped down to 30 days; absent: the default (24 h).
      expect((await createTask(c, 'synthetic', {}, 10 ** 12)).ttl).toBe(30 * 24 * 3600_000);
      expect((await createTask(c, 'synthetic', {})).ttl).toBe(24 * 3600_000);
      const listed = await c.experimental.tasks.listTasks();
      expect(listed.tasks.map((t) => t.taskId)).toContain(created!.taskId);
    });

    it('a plain tools/call holds the request until the task ends, with progress on its token', async () => {
      const c = await client();
      const progress: string[] = [];
      const r = await c.callTool({ name: 'synthetic', arguments: { steps: 4, stepMs: 40 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.message ?? '') });
      expect(r).toMatchObject({ structuredContent: { steps_done: 4 }, isError: false });
      expect(progress.length).toBeGreaterThan(0);
      // Bad arguments on a plain call are a tool execution error the model can read, not a protocol error.
      const bad = await c.callTool({ name: 'synthetic', arguments: { steps: 'many' } });
      expect(bad.isError).toBe(true);
    });

    it('the access-review question arrives as an elicitation tied to the task; the answer resumes it through the service', async () => {
      const asked: ElicitRequest[] = [];
      const c = await client(ALICE, {
        onElicit: (req) => {
          asked.push(req);
          return { action: 'accept', content: { approved: true } };
        },
      });
      await c.listTools();
      let taskId = '';
      let result: any;
      for await (const m of c.experimental.tasks.callToolStream({ name: 'access-review', arguments: { systems: 3, revocations: 2 } }, CallToolResultSchema, { task: { ttl: 600_000 } })) {
        if (m.type === 'taskCreated') taskId = m.task.taskId;
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      // The question reaches the client on the session's stream or on tasks/result, whichever comes first: once.
      expect(asked).toHaveLength(1);
      const params = asked[0]!.params as any;
      expect(params._meta['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      expect(params._meta['dev.belay/input']).toMatchObject({ key: 'approval', version: expect.any(Number) });
      expect(params.message).toContain('Approve revoking 2 stale grants?');
      expect(params.requestedSchema).toEqual({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });
      expect(result).toMatchObject({ structuredContent: { systems_reviewed: 3, revocations_applied: 2 }, isError: false });
      expect(downstream.countByKind('revoke')).toBe(2);
      const events = await gw.service.listEvents({ tenant: 'acme', principal: 'alice', role: 'member' }, taskId);
      expect(events.filter((e) => e.kind === 'input_required')).toHaveLength(1);
      expect(events.filter((e) => e.kind === 'input_received')).toHaveLength(1);
    });

    it('an elicitation response is checked for schema and version by the service, on any gateway and without a session', async () => {
      const c = await client();
      const task = await createTask(c, 'access-review', { systems: 2, revocations: 1 });
      await waitStatus(c, task.taskId, ['input_required']);
      const row = await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, task.taskId);
      const gw2 = await startGateway(await stores.reopen(), registry);
      extra.push(() => gw2.close());
      const respond = (version: number, content: unknown, key = ALICE) =>
        rpc(gw2.url, key, { jsonrpc: '2.0', id: inputRequestId({ taskId: task.taskId, key: 'approval', version }), result: { action: 'accept', content } }, { 'mcp-protocol-version': '2025-11-25' });
      // Wrong schema: refused, nothing changes.
      expect((await respond(row.version, { approved: 'maybe' })).status).toBe(202);
      // Another tenant answering: nothing changes.
      expect((await respond(row.version, { approved: true }, MALLORY)).status).toBe(202);
      // A stale version: refused.
      expect((await respond(row.version - 1, { approved: true })).status).toBe(202);
      // Declined: the question stays pending.
      await rpc(gw2.url, ALICE, { jsonrpc: '2.0', id: inputRequestId({ taskId: task.taskId, key: 'approval', version: row.version }), result: { action: 'decline' } });
      const still = await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, task.taskId);
      expect(still).toMatchObject({ state: 'input_required', version: row.version });
      // The right answer, for the version asked, resumes the task.
      expect((await respond(row.version, { approved: true })).status).toBe(202);
      expect((await waitStatus(c, task.taskId, ['completed'])).status).toBe('completed');
      expect(downstream.countByKind('revoke')).toBe(1);
    });

    it('tasks/cancel moves the task to cancelled before answering and stops the running step through the runtime', async () => {
      const c = await client();
      const task = await createTask(c, 'synthetic', { steps: 1, stepMs: 20_000 });
      const who = { tenant: 'acme', principal: 'alice' };
      await eventually(async () => (await gw.service.getTask(who, task.taskId)).leaseOwner !== null, 10_000);
      const started = Date.now();
      const cancelled = await c.experimental.tasks.cancelTask(task.taskId);
      expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
      expect((await c.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
      // The worker's step saw its AbortSignal: the 20 s sleep ended at once and the runtime committed canceled.
      await eventually(async () => (await gw.service.getTask(who, task.taskId)).state === 'canceled', 10_000);
      expect(Date.now() - started).toBeLessThan(10_000);
      const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result).toMatchObject({ isError: true, structuredContent: { status: 'cancelled', error: { code: 'CANCELLED' } } });
      const again = await rpcError(c.experimental.tasks.cancelTask(task.taskId));
      expect(again).toMatchObject({ code: -32602, message: 'Cannot cancel task in terminal status: cancelled' });
      // A finished task cannot be cancelled either.
      const done = await createTask(c, 'synthetic', {});
      await waitStatus(c, done.taskId, ['completed']);
      expect(await rpcError(c.experimental.tasks.cancelTask(done.taskId))).toMatchObject({ code: -32602, message: 'Cannot cancel task in terminal status: completed' });
    });

    it('a failed task is failed with an isError result', async () => {
      const c = await client();
      const task = await createTask(c, 'doomed', {});
      const failed = await waitStatus(c, task.taskId, ['failed']);
      expect(failed.statusMessage).toContain('System 7 has no such grant');
      const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect(result).toMatchObject({ isError: true, structuredContent: { status: 'failed', error: { code: 'grant_not_found' } } });
    });

    it('a new session and a second gateway on the same store see and control the task, and answer its question', async () => {
      const c1 = await client();
      const review = await createTask(c1, 'access-review', { systems: 2, revocations: 1 });
      const slow = await createTask(c1, 'synthetic', { steps: 1, stepMs: 20_000 });
      await waitStatus(c1, review.taskId, ['input_required']);
      await c1.close();
      // A second gateway instance with its own store connection; the first one is stopped (a restart).
      const store2 = await stores.reopen();
      const gw2 = await startGateway(store2, registry);
      extra.push(async () => {
        await gw2.close();
        await store2.close();
      });
      await gw.close();
      const asked: ElicitRequest[] = [];
      const c2 = await client(
        ALICE,
        {
          onElicit: (req) => {
            asked.push(req);
            return { action: 'accept', content: { approved: true } };
          },
        },
        gw2.url,
      );
      expect((await c2.experimental.tasks.getTask(review.taskId)).status).toBe('input_required');
      expect((await c2.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toEqual(expect.arrayContaining([review.taskId, slow.taskId]));
      // tasks/result on the new gateway asks the durable question, and the answer resumes the task.
      const result = await c2.experimental.tasks.getTaskResult(review.taskId, CallToolResultSchema);
      expect(asked).toHaveLength(1);
      expect(result).toMatchObject({ structuredContent: { revocations_applied: 1 } });
      expect((await c2.experimental.tasks.cancelTask(slow.taskId)).status).toBe('cancelled');
      // A client still holding a session id from the stopped gateway is served from the store, not refused.
      const stale = await client(ALICE, { sessionId: 'a-session-from-before-the-restart' }, gw2.url);
      expect((await stale.experimental.tasks.getTask(review.taskId)).status).toBe('completed');
      await eventually(async () => (await gw2.service.getTask({ tenant: 'acme', principal: 'alice' }, slow.taskId)).state === 'canceled', 10_000);
    });

    it('another tenant or another member sees a foreign task exactly like a missing one, and changes nothing', async () => {
      const c = await client();
      const task = await createTask(c, 'synthetic', { steps: 1, stepMs: 3000 });
      for (const key of [MALLORY, BOB]) {
        const other = await client(key);
        const missing = await rpcError(other.experimental.tasks.getTask('task_00000000000000000000000000000000000000000000'));
        expect(missing).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found', data: { code: 'not_found', owner: 'caller', retryable: false } });
        expect(await rpcError(other.experimental.tasks.getTask(task.taskId))).toEqual(missing);
        expect(await rpcError(other.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema))).toEqual(missing);
        expect(await rpcError(other.experimental.tasks.cancelTask(task.taskId))).toEqual(missing);
        expect((await other.experimental.tasks.listTasks()).tasks).toEqual([]);
      }
      const mine = await c.experimental.tasks.getTask(task.taskId);
      expect(mine.status).toBe('working');
      expect((await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, task.taskId)).cancelRequestedAt).toBeNull();
    });

    it('bad params are -32602 and unknown methods -32601, exactly', async () => {
      const { post } = await rawSession(gw.url, ALICE);
      const errorOf = async (method: string, params?: unknown) => (await post({ jsonrpc: '2.0', id: 7, method, ...(params === undefined ? {} : { params }) })).body.error;
      expect(await errorOf('tasks/get', {})).toMatchObject({ code: -32602 });
      expect(await errorOf('tasks/get', { taskId: 42 })).toMatchObject({ code: -32602 });
      expect(await errorOf('tasks/get', { taskId: 'task_nope' })).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found', data: { code: 'not_found', owner: 'caller', retryable: false } });
      expect(await errorOf('tasks/result', { taskId: 'task_nope' })).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      expect(await errorOf('tasks/cancel', { taskId: 'task_nope' })).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      expect(await errorOf('tasks/list', { cursor: 'not-a-cursor' })).toMatchObject({ code: -32602, data: { code: 'validation' } });
      expect(await errorOf('tools/call', { name: 'no-such-tool', arguments: {}, task: {} })).toMatchObject({ code: -32602, message: 'Unknown tool: no-such-tool' });
      expect(await errorOf('tools/call', { name: 'no-such-tool', arguments: {} })).toMatchObject({ code: -32602 });
      expect(await errorOf('tools/call', { name: 'synthetic', arguments: { steps: 'many' }, task: {} })).toMatchObject({ code: -32602, data: { code: 'validation' } });
      expect(await errorOf('tools/call', { arguments: {} })).toMatchObject({ code: -32602 });
      // tasks/update belongs to the extension, not to 2025-11-25.
      expect(await errorOf('tasks/update', { taskId: 'x', inputResponses: {} })).toEqual({ code: -32601, message: 'Method not found' });
      expect(await errorOf('no/such-method', {})).toEqual({ code: -32601, message: 'Method not found' });
      expect(await store.countByState()).toEqual({});
    });

    it('HTTP edges: the shared bearer auth (401), a body that is not JSON (-32700), GET without a session (405), an unknown session (404)', async () => {
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } };
      const unauthenticated = await rpc(gw.url, 'not-a-key', init);
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.body).toMatchObject({ code: 'unauthorized' });
      const notJson = await rpc(gw.url, ALICE, '{"jsonrpc":');
      expect(notJson.status).toBe(400);
      expect(notJson.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
      const get = (headers: Record<string, string>) => fetch(gw.url, { headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream', ...headers } });
      expect((await get({})).status).toBe(405);
      expect((await get({ 'mcp-session-id': 'no-such-session' })).status).toBe(404);
      const del = await fetch(gw.url, { method: 'DELETE', headers: { authorization: `Bearer ${ALICE}`, 'mcp-session-id': 'no-such-session' } });
      expect(del.status).toBe(404);
      // Another principal cannot use someone's session: it is served without one, as that principal.
      const { sessionId } = await rawSession(gw.url, ALICE);
      const c = await client();
      const mine = await createTask(c, 'synthetic', { steps: 1, stepMs: 2000 });
      const borrowed = await rpc(gw.url, MALLORY, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: mine.taskId } }, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' });
      expect(borrowed.body.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    });

    it('an expired task says so (retention tombstone or elapsed ttl), and to anyone else it stays missing', async () => {
      const c = await client();
      const other = await client(MALLORY);
      const retained = await createTask(c, 'synthetic', {});
      await waitStatus(c, retained.taskId, ['completed']);
      const row = await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, retained.taskId);
      expect(await store.expireTasks(row.expiresAt!, 10)).toBe(1);
      // One call at a time: promises started together and awaited in turn leave a later rejection unhandled.
      for (const call of [() => c.experimental.tasks.getTask(retained.taskId), () => c.experimental.tasks.getTaskResult(retained.taskId, CallToolResultSchema), () => c.experimental.tasks.cancelTask(retained.taskId)]) {
        expect(await rpcError(call())).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task has expired', data: { code: 'task_expired', final_state: 'completed' } });
      }
      expect(await rpcError(other.experimental.tasks.getTask(retained.taskId))).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      // ttl: a finished task whose ttl has elapsed is gone from MCP (and from tasks/list) while REST retention keeps it.
      const short = await createTask(c, 'synthetic', {}, 60_000);
      await waitStatus(c, short.taskId, ['completed']);
      gw.clock.offset = 61_000;
      expect(await rpcError(c.experimental.tasks.getTask(short.taskId))).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task has expired' });
      expect((await c.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(short.taskId);
      expect((await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, short.taskId)).state).toBe('completed');
    });

    it('real processes: a second gateway process controls the task; after it is SIGKILLed a new one answers the durable question for a client holding the dead session id', async () => {
      const procs: ServerProcess[] = [];
      extra.push(async () => {
        for (const p of procs) p.child.kill('SIGKILL');
        await Promise.all(procs.map((p) => p.exited));
      });
      const c1 = await client();
      const review = await createTask(c1, 'access-review', { systems: 2, revocations: 1 });
      const slow = await createTask(c1, 'synthetic', { steps: 1, stepMs: 20_000 });
      await waitStatus(c1, review.taskId, ['input_required']);
      const first = spawnServer({ db: stores.url(), apiKeys: KEYS });
      procs.push(first);
      const { client: c2, transport } = await connectClient(`${await first.url}/mcp`, ALICE, { onElicit: () => ({ action: 'decline' }) });
      clients.push(c2);
      expect((await c2.experimental.tasks.getTask(review.taskId)).status).toBe('input_required');
      expect((await c2.experimental.tasks.cancelTask(slow.taskId)).status).toBe('cancelled');
      const deadSession = transport.sessionId!;
      expect(deadSession).toBeTruthy();
      first.child.kill('SIGKILL');
      await first.exited;
      const second = spawnServer({ db: stores.url(), apiKeys: KEYS });
      procs.push(second);
      const asked: ElicitRequest[] = [];
      const c3 = await client(ALICE, { sessionId: deadSession, onElicit: (req) => (asked.push(req), { action: 'accept', content: { approved: true } }) }, `${await second.url}/mcp`);
      const result = await c3.experimental.tasks.getTaskResult(review.taskId, CallToolResultSchema, { timeout: 30_000 });
      expect(result).toMatchObject({ structuredContent: { revocations_applied: 1 }, _meta: { 'io.modelcontextprotocol/related-task': { taskId: review.taskId } } });
      expect(asked).toHaveLength(1);
      expect((await c3.experimental.tasks.getTask(slow.taskId)).status).toBe('cancelled');
      await eventually(async () => (await gw.service.getTask({ tenant: 'acme', principal: 'alice' }, slow.taskId)).state === 'canceled', 10_000);
    }, 60_000);

    it('a live session gets notifications/tasks/status from the event log, in order, ending with the terminal one', async () => {
      const statuses: string[] = [];
      const c = await client(ALICE, { onElicit: () => ({ action: 'accept', content: { approved: true } }) });
      c.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
        statuses.push(n.params.status);
      });
      const task = await createTask(c, 'access-review', { systems: 2, revocations: 1 });
      // This client never calls tasks/result: the question reaches it on the session's stream.
      await eventually(async () => statuses.includes('completed'), 20_000);
      expect(statuses).toEqual(['input_required', 'working', 'completed']);
      expect((await c.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    });
  });
}
