/**
 * The A2A 1.0 front over real sockets, on both stores, driven by the real `@a2a-js/sdk` client over both bindings
 * (JSON-RPC and HTTP+JSON), plus raw-HTTP checks for what a client library hides (headers, error bodies, versions).
 */
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError, VersionNotSupportedError } from '@a2a-js/sdk/errors';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { Worker } from '../../src/runtime/worker.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { a2aClient, collect, sendRequest, stateOf, taskJson, type Binding, type WireJson } from '../helpers/a2a-client.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const ALICE = 'key-alice-0123456789abcdef';
const BOB = 'key-bob-0123456789abcdefgh';
const MALLORY = 'key-mallory-0123456789abcdef';
const KEYS = [`${ALICE}=acme:alice`, `${BOB}=acme:bob`, `${MALLORY}=globex:mallory`];
const BINDINGS: Binding[] = ['JSONRPC', 'HTTP+JSON'];

let counter = 0;
const mid = (p = 'm') => `${p}-${Date.now()}-${++counter}`;

/** A message that starts an access review (small, so it reaches its question quickly). */
function reviewMessage(input: Record<string, unknown> = { systems: 3, revocations: 2 }, extra: Record<string, unknown> = {}) {
  return { messageId: mid(), role: 'ROLE_USER', parts: [{ text: 'Please run the quarterly access review' }, { data: input }], metadata: { skillId: 'access-review' }, ...extra };
}

async function raw(base: string, path: string, init: { method?: string; key?: string | null; version?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? ALICE}`;
  if (init.version !== null) headers['a2a-version'] = init.version ?? '1.0';
  let body = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${base}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let json: WireJson = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json, text };
}

function rpc(base: string, method: string, params: unknown, init: { key?: string | null; version?: string | null; id?: unknown } = {}) {
  return raw(base, '/a2a/jsonrpc', { ...init, body: { jsonrpc: '2.0', id: init.id ?? 7, method, params } });
}

for (const kind of storesUnderTest()) {
  describe(`A2A front on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store | null = null;
    let server: RunningServer | null = null;
    let worker: Worker | null = null;
    let service: TaskService;
    const extraStores: Store[] = [];
    const extraServers: RunningServer[] = [];

    function gateway(s: Store) {
      const registry = exampleRegistry(new InMemoryDownstream());
      const svc = new TaskService({ store: s, registry, clock: systemClock });
      const app = createBelayApp({ service: svc, auth: new Authenticator({ apiKeys: KEYS.map(parseApiKeySpec) }), rateLimit: null, heartbeatMs: 200, a2a: { blockingTimeoutMs: 15_000 } });
      return { svc, app, registry };
    }

    beforeEach(async () => {
      store = await stores.open();
      const g = gateway(store);
      service = g.svc;
      server = await listen(g.app.fetch, { port: 0, host: '127.0.0.1' });
      worker = new Worker({ store, registry: g.registry, concurrency: 4, leaseMs: 2000, pollMs: 50 });
      worker.start();
    });
    afterEach(async () => {
      for (const s of extraServers.splice(0)) await s.close();
      await server?.close();
      await worker?.stop(5000);
      for (const s of extraStores.splice(0)) await s.close();
      await store?.close();
      server = null;
      worker = null;
      store = null;
    });
    afterAll(() => stores.teardown());

    const base = () => server!.url;

    it('serves a public agent card with both bindings, streaming, push, one skill per task type, bearer security, ETag and Cache-Control', async () => {
      const r = await raw(base(), '/.well-known/agent-card.json', { key: null, version: null });
      expect(r.status).toBe(200);
      const card = r.json;
      expect(card.supportedInterfaces).toEqual([
        { url: `${base()}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: `${base()}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ]);
      expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true, extendedAgentCard: true });
      expect(card.skills.map((s: WireJson) => s.id).sort()).toEqual([...new Set(service.registry.list().map((t) => t.name))].sort());
      expect(card.securitySchemes.bearer.httpAuthSecurityScheme).toMatchObject({ scheme: 'Bearer', bearerFormat: 'API key' });
      expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
      const etag = r.headers.get('etag');
      expect(etag).toMatch(/^".+"$/);
      expect(r.headers.get('cache-control')).toContain('max-age=');
      expect(r.headers.get('last-modified')).toBeTruthy();
      const again = await raw(base(), '/.well-known/agent-card.json', { key: null, version: null, headers: { 'if-none-match': etag! } });
      expect(again.status).toBe(304);
    });

    for (const binding of BINDINGS) {
      describe(`over ${binding} with @a2a-js/sdk`, () => {
        let alice: Client;
        beforeEach(async () => {
          alice = await a2aClient(base(), ALICE, binding);
        });

        it('streams an access review to input_required, continues the same taskId, and streams it to completion with the report artifact', async () => {
          const first = await collect(alice.sendMessageStream(sendRequest({ message: reviewMessage() })));
          expect(first[0].task).toBeDefined();
          expect(first[0].task.status.state).toBe('TASK_STATE_SUBMITTED');
          const taskId = first[0].task.id;
          const contextId = first[0].task.contextId;
          expect(first.at(-1).statusUpdate.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
          const question = first.at(-1).statusUpdate.status.message;
          expect(question.role).toBe('ROLE_AGENT');
          expect(question.parts[0].text).toMatch(/Approve revoking 2 stale grants/);
          expect(question.parts[1].data).toMatchObject({ key: 'approval', schema: { type: 'object' } });
          expect(first.every((e) => (e.task ?? e.statusUpdate ?? e.artifactUpdate) !== undefined)).toBe(true);

          const second = await collect(
            alice.sendMessageStream(sendRequest({ message: { messageId: mid('answer'), taskId, role: 'ROLE_USER', parts: [{ data: { approved: true } }] } })),
          );
          expect(second[0].task.id).toBe(taskId);
          expect(second[0].task.status.state).toBe('TASK_STATE_WORKING');
          const states = second.map(stateOf).filter(Boolean);
          expect(states.at(-1)).toBe('TASK_STATE_COMPLETED');
          const artifactIdx = second.findIndex((e) => e.artifactUpdate);
          expect(artifactIdx).toBeGreaterThan(0);
          expect(artifactIdx).toBeLessThan(second.length - 1);
          expect(second[artifactIdx].artifactUpdate.artifact).toMatchObject({ name: 'access-review-report', parts: [{ data: { revocations_applied: 2, systems_reviewed: 3 } }] });

          const done = taskJson(await alice.getTask({ tenant: '', id: taskId }));
          expect(done.status.state).toBe('TASK_STATE_COMPLETED');
          expect(done.contextId).toBe(contextId);
          expect(done.artifacts[0].parts[0].data.revoked).toHaveLength(2);
          // History from the event log: the user's request, the agent's question, the user's answer.
          expect(done.history.map((m: WireJson) => m.role)).toEqual(['ROLE_USER', 'ROLE_AGENT', 'ROLE_USER']);
          expect(done.history[0].parts[0].text).toBe('Please run the quarterly access review');
          expect(done.history[2].parts[0].data).toEqual({ approved: true });
          expect(done.history.every((m: WireJson) => m.taskId === taskId && m.contextId === contextId)).toBe(true);
          await expectCleanHistory(store!, taskId);
        });

        it('blocking SendMessage returns at input_required, and the answer (echoing inputVersion) returns the completed task', async () => {
          const paused = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage() })));
          expect(paused.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
          const q = paused.status.message.parts[1].data;
          expect(q.inputVersion).toBeGreaterThan(0);
          // A stale version is refused and changes nothing.
          await expect(
            alice.sendMessage(sendRequest({ message: { messageId: mid(), taskId: paused.id, role: 'ROLE_USER', parts: [{ data: { approved: true } }], metadata: { belay: { inputVersion: q.inputVersion - 1 } } } })),
          ).rejects.toBeInstanceOf(RequestMalformedError);
          // An answer that does not match the question's schema is refused too.
          await expect(alice.sendMessage(sendRequest({ message: { messageId: mid(), taskId: paused.id, role: 'ROLE_USER', parts: [{ data: { approved: 'yes' } }] } }))).rejects.toBeInstanceOf(RequestMalformedError);
          const answer = { messageId: mid('answer'), taskId: paused.id, contextId: paused.contextId, role: 'ROLE_USER', parts: [{ data: { approved: true, keep: [] } }], metadata: { belay: { inputVersion: q.inputVersion } } };
          const done = taskJson(await alice.sendMessage(sendRequest({ message: answer })));
          expect(done.status.state).toBe('TASK_STATE_COMPLETED');
          expect(done.artifacts[0].name).toBe('access-review-report');
          // The client retried the same answer (same messageId): it gets the task back, not an error.
          const replay = taskJson(await alice.sendMessage(sendRequest({ message: answer })));
          expect(replay.id).toBe(done.id);
          // A new message to a terminal task is UnsupportedOperation.
          await expect(alice.sendMessage(sendRequest({ message: { ...answer, messageId: mid() } }))).rejects.toBeInstanceOf(UnsupportedOperationError);
        });

        it('returnImmediately answers at once in an in-progress state; a resent messageId never starts a second task', async () => {
          const message = reviewMessage({ systems: 2, revocations: 1, stepDelayMs: 400 });
          const t = taskJson(await alice.sendMessage(sendRequest({ message, configuration: { returnImmediately: true } })));
          expect(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING']).toContain(t.status.state);
          const again = taskJson(await alice.sendMessage(sendRequest({ message, configuration: { returnImmediately: true } })));
          expect(again.id).toBe(t.id);
          const page = await alice.listTasks({ tenant: '', contextId: t.contextId, status: 0, pageToken: '', statusTimestampAfter: undefined, pageSize: 10 });
          expect(page.tasks).toHaveLength(1);
        });

        it('GetTask honours historyLength: unset is all, 0 omits the key, N keeps the most recent N', async () => {
          const paused = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage() })));
          const all = taskJson(await alice.getTask({ tenant: '', id: paused.id }));
          expect(all.history.map((m: WireJson) => m.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
          const none = await raw(base(), binding === 'JSONRPC' ? '/a2a/jsonrpc' : `/a2a/rest/tasks/${paused.id}?historyLength=0`, binding === 'JSONRPC' ? { body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: paused.id, historyLength: 0 } } } : {});
          const noneTask = binding === 'JSONRPC' ? none.json.result : none.json;
          expect(noneTask.id).toBe(paused.id);
          expect('history' in noneTask).toBe(false);
          const one = taskJson(await alice.getTask({ tenant: '', id: paused.id, historyLength: 1 }));
          expect(one.history).toHaveLength(1);
          expect(one.history[0].role).toBe('ROLE_AGENT');
          expect(taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage(), configuration: { historyLength: 1 } }))).history).toHaveLength(1);
        });

        it('ListTasks: newest status first, pageSize/nextPageToken/totalSize as specified, filters, no artifacts unless asked', async () => {
          const contextId = `ctx-${mid()}`;
          const ids: string[] = [];
          for (let i = 0; i < 3; i++) {
            const t = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage({ systems: 1, revocations: 0 }, { contextId }) })));
            ids.push(t.id);
          }
          const p1 = await alice.listTasks({ tenant: '', contextId, status: 0, pageToken: '', statusTimestampAfter: undefined, pageSize: 2 });
          expect(p1.pageSize).toBe(2);
          expect(p1.totalSize).toBe(3);
          expect(p1.tasks).toHaveLength(2);
          expect(p1.nextPageToken).not.toBe('');
          const p2 = await alice.listTasks({ tenant: '', contextId, status: 0, pageToken: p1.nextPageToken, statusTimestampAfter: undefined, pageSize: 2 });
          expect(p2.tasks).toHaveLength(1);
          expect(p2.nextPageToken).toBe('');
          const listed = [...p1.tasks, ...p2.tasks].map((t) => taskJson(t));
          expect(listed.map((t) => t.id).sort()).toEqual([...ids].sort());
          const stamps = listed.map((t) => Date.parse(t.status.timestamp));
          expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
          expect(listed.every((t) => !('artifacts' in t) && !('history' in t))).toBe(true);
          // Raw, to see keys a client library would fill in.
          const q = `contextId=${contextId}&pageSize=1&includeArtifacts=true&historyLength=1&status=TASK_STATE_COMPLETED`;
          const rawList = binding === 'JSONRPC'
            ? (await rpc(base(), 'ListTasks', { contextId, pageSize: 1, includeArtifacts: true, historyLength: 1, status: 'TASK_STATE_COMPLETED' })).json.result
            : (await raw(base(), `/a2a/rest/tasks?${q}`)).json;
          expect(rawList).toMatchObject({ pageSize: 1, totalSize: 0, nextPageToken: '', tasks: [] });
          const withArtifacts = binding === 'JSONRPC'
            ? (await rpc(base(), 'ListTasks', { contextId, pageSize: 1, includeArtifacts: true, historyLength: 1 })).json.result
            : (await raw(base(), `/a2a/rest/tasks?contextId=${contextId}&pageSize=1&includeArtifacts=true&historyLength=1`)).json;
          expect(withArtifacts.tasks[0].artifacts).toBeDefined();
          expect(withArtifacts.tasks[0].history).toHaveLength(1);
          const future = await alice.listTasks({ tenant: '', contextId, status: 0, pageToken: '', statusTimestampAfter: new Date(Date.now() + 60_000).toISOString() });
          expect(future.tasks).toHaveLength(0);
          for (const pageSize of [0, 101]) {
            const bad = binding === 'JSONRPC' ? (await rpc(base(), 'ListTasks', { pageSize })).json.error : (await raw(base(), `/a2a/rest/tasks?pageSize=${pageSize}`)).json.error;
            if (binding === 'JSONRPC') expect(bad.code).toBe(-32602);
            else expect(bad).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
          }
          // Another tenant sees none of them; a member sees only its own.
          const mallory = await a2aClient(base(), MALLORY, binding);
          expect((await mallory.listTasks({ tenant: '', contextId, status: 0, pageToken: '' } as never)).totalSize).toBe(0);
          const bob = await a2aClient(base(), BOB, binding);
          expect((await bob.listTasks({ tenant: '', contextId, status: 0, pageToken: '' } as never)).totalSize).toBe(0);
        });

        it('CancelTask cancels, is idempotent, and refuses a completed task', async () => {
          const slow = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage({ systems: 50, revocations: 1, stepDelayMs: 200 }), configuration: { returnImmediately: true } })));
          const canceled = taskJson(await alice.cancelTask({ tenant: '', id: slow.id, metadata: undefined }));
          expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
          const again = taskJson(await alice.cancelTask({ tenant: '', id: slow.id, metadata: undefined }));
          expect(again.status.state).toBe('TASK_STATE_CANCELED');
          const done = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage({ systems: 1, revocations: 0 }) })));
          const finished = taskJson(await alice.sendMessage(sendRequest({ message: { messageId: mid(), taskId: done.id, role: 'ROLE_USER', parts: [{ data: { approved: false } }] } })));
          expect(finished.status.state).toBe('TASK_STATE_COMPLETED');
          await expect(alice.cancelTask({ tenant: '', id: done.id, metadata: undefined })).rejects.toBeInstanceOf(TaskNotCancelableError);
          await expect(alice.cancelTask({ tenant: '', id: 'task_missing', metadata: undefined })).rejects.toBeInstanceOf(TaskNotFoundError);
          await expect(collect(alice.resubscribeTask({ tenant: '', id: done.id }))).rejects.toBeInstanceOf(UnsupportedOperationError);
        });

        it('SubscribeToTask on another gateway after the first one stopped: snapshot first, open across input_required, closes at completion', async () => {
          const first = await collect(alice.sendMessageStream(sendRequest({ message: reviewMessage({ systems: 2, revocations: 1, stepDelayMs: 150 }) })), (_e, all) => all.length >= 2);
          const taskId = first[0].task.id;
          // The first gateway goes away mid-task; a second gateway on its own store connection serves the subscription.
          await server!.close();
          const other = await stores.reopen();
          extraStores.push(other);
          const g = gateway(other);
          const second = await listen(g.app.fetch, { port: 0, host: '127.0.0.1' });
          extraServers.push(second);
          const client = await a2aClient(second.url, ALICE, binding);
          const events: WireJson[] = [];
          let answered = false;
          for await (const e of client.resubscribeTask({ tenant: '', id: taskId })) {
            const j = (await import('../helpers/a2a-client.js')).streamJson(e);
            events.push(j);
            if (!answered && stateOf(j) === 'TASK_STATE_INPUT_REQUIRED') {
              answered = true;
              const t = taskJson(await client.sendMessage(sendRequest({ message: { messageId: mid(), taskId, role: 'ROLE_USER', parts: [{ data: { approved: true } }] }, configuration: { returnImmediately: true } })));
              expect(t.status.state).toBe('TASK_STATE_WORKING');
            }
          }
          expect(events[0].task.id).toBe(taskId);
          expect(answered).toBe(true);
          expect(stateOf(events.at(-1))).toBe('TASK_STATE_COMPLETED');
          expect(events.some((e) => e.artifactUpdate?.artifact.name === 'access-review-report')).toBe(true);
        });

        it('push notification configs: create (given and generated ids), get, list, replace, delete idempotently; bad URLs refused', async () => {
          const t = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage() })));
          const created = await alice.createTaskPushNotificationConfig({ tenant: '', id: 'hook-1', taskId: t.id, url: 'https://hooks.example.com/a2a', token: 'tok-1', authentication: { scheme: 'Bearer', credentials: 'secret' } });
          expect(created).toMatchObject({ id: 'hook-1', taskId: t.id, url: 'https://hooks.example.com/a2a', token: 'tok-1', authentication: { scheme: 'Bearer', credentials: 'secret' } });
          const generated = await alice.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: t.id, url: 'http://127.0.0.1:9/hook', token: '', authentication: undefined });
          expect(generated.id).toMatch(/^pnc_/);
          expect(await alice.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' })).toMatchObject({ url: 'https://hooks.example.com/a2a' });
          await alice.createTaskPushNotificationConfig({ tenant: '', id: 'hook-1', taskId: t.id, url: 'https://hooks.example.com/v2', token: '', authentication: undefined });
          const list = await alice.listTaskPushNotificationConfig({ tenant: '', taskId: t.id, pageToken: '' } as never);
          expect(list.configs.map((c) => c.id).sort()).toEqual([generated.id, 'hook-1'].sort());
          expect(list.configs.find((c) => c.id === 'hook-1')!.url).toBe('https://hooks.example.com/v2');
          await alice.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
          await alice.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
          await expect(alice.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' })).rejects.toBeInstanceOf(TaskNotFoundError);
          for (const url of ['ftp://hooks.example.com/x', 'not a url', 'https://user:pw@hooks.example.com/x']) {
            await expect(alice.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: t.id, url, token: '', authentication: undefined })).rejects.toBeInstanceOf(RequestMalformedError);
          }
          await expect(alice.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: 'task_missing', url: 'https://hooks.example.com/x', token: '', authentication: undefined })).rejects.toBeInstanceOf(TaskNotFoundError);
          // Registered inline with the message that starts a task.
          const inline = taskJson(
            await alice.sendMessage(sendRequest({ message: reviewMessage(), configuration: { returnImmediately: true, taskPushNotificationConfig: { id: 'inline', url: 'https://hooks.example.com/inline' } } })),
          );
          expect((await alice.getTaskPushNotificationConfig({ tenant: '', taskId: inline.id, id: 'inline' })).url).toBe('https://hooks.example.com/inline');
        });

        it('another tenant (or another member) gets TaskNotFound for every task-addressed operation', async () => {
          const t = taskJson(await alice.sendMessage(sendRequest({ message: reviewMessage() })));
          await alice.createTaskPushNotificationConfig({ tenant: '', id: 'h', taskId: t.id, url: 'https://hooks.example.com/a', token: '', authentication: undefined });
          for (const key of [MALLORY, BOB]) {
            const other = await a2aClient(base(), key, binding);
            await expect(other.getTask({ tenant: '', id: t.id })).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.cancelTask({ tenant: '', id: t.id, metadata: undefined })).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(collect(other.resubscribeTask({ tenant: '', id: t.id }))).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.sendMessage(sendRequest({ message: { messageId: mid(), taskId: t.id, role: 'ROLE_USER', parts: [{ data: { approved: true } }] } }))).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'h' })).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.listTaskPushNotificationConfig({ tenant: '', taskId: t.id, pageToken: '' } as never)).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'h' })).rejects.toBeInstanceOf(TaskNotFoundError);
            await expect(other.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: t.id, url: 'https://evil.example.com/', token: '', authentication: undefined })).rejects.toBeInstanceOf(TaskNotFoundError);
          }
          // Naming another tenant explicitly does not help either.
          await expect(alice.getTask({ tenant: 'globex', id: t.id })).rejects.toBeInstanceOf(TaskNotFoundError);
          expect(taskJson(await alice.getTask({ tenant: 'acme', id: t.id })).id).toBe(t.id);
          // Nothing changed.
          expect(taskJson(await alice.getTask({ tenant: '', id: t.id })).status.state).toBe('TASK_STATE_INPUT_REQUIRED');
        });

        it('refuses file parts and output modes it cannot produce with ContentTypeNotSupported, and returns the extended card', async () => {
          await expect(alice.sendMessage(sendRequest({ message: { messageId: mid(), role: 'ROLE_USER', parts: [{ url: 'https://example.com/f.pdf', mediaType: 'application/pdf' }], metadata: { skillId: 'access-review' } } }))).rejects.toBeInstanceOf(
            ContentTypeNotSupportedError,
          );
          await expect(alice.sendMessage(sendRequest({ message: reviewMessage(), configuration: { acceptedOutputModes: ['image/png'] } }))).rejects.toBeInstanceOf(ContentTypeNotSupportedError);
          await expect(alice.sendMessage(sendRequest({ message: { messageId: mid(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } }))).rejects.toBeInstanceOf(RequestMalformedError);
          const card = await alice.getAgentCard();
          expect(card.capabilities?.extensions?.[0]?.uri).toBe('https://belay.dev/a2a/extensions/task-types/v1');
        });
      });
    }

    describe('raw JSON-RPC', () => {
      it('maps protocol errors to -32700, -32600, -32601, -32602 and -32009 with ErrorInfo reasons', async () => {
        const parse = await raw(base(), '/a2a/jsonrpc', { rawBody: '{not json', headers: { 'content-type': 'application/json' } });
        expect(parse.status).toBe(200);
        expect(parse.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
        expect((await raw(base(), '/a2a/jsonrpc', { body: [{ jsonrpc: '2.0', id: 1, method: 'GetTask' }] })).json.error.code).toBe(-32600);
        expect((await raw(base(), '/a2a/jsonrpc', { body: { jsonrpc: '1.0', id: 1, method: 'GetTask', params: {} } })).json.error.code).toBe(-32600);
        const unknown = await rpc(base(), 'tasks/get', { id: 'x' }, { id: 'abc' });
        expect(unknown.json).toMatchObject({ id: 'abc', error: { code: -32601 } });
        const bad = await rpc(base(), 'GetTask', { historyLength: -1 });
        expect(bad.json.error.code).toBe(-32602);
        expect(bad.json.error.data[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS', domain: 'a2a-protocol.org' });
        expect(bad.json.error.data[1]['@type']).toBe('type.googleapis.com/google.rpc.BadRequest');
        expect(bad.json.error.data[1].fieldViolations.map((v: WireJson) => v.field).sort()).toEqual(['historyLength', 'id']);
        const missing = await rpc(base(), 'GetTask', { id: 'task_missing' });
        expect(missing.json.error).toMatchObject({ code: -32001, data: [{ reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { belayCode: 'NOT_FOUND' } }] });
      });

      it('A2A-Version: 1.0 (header or query) is served; none (= 0.3) or another version is VersionNotSupported', async () => {
        const none = await rpc(base(), 'GetTask', { id: 'task_missing' }, { version: null });
        expect(none.json.error).toMatchObject({ code: -32009, data: [{ reason: 'VERSION_NOT_SUPPORTED' }] });
        expect((await rpc(base(), 'GetTask', { id: 'task_missing' }, { version: '0.3' })).json.error.code).toBe(-32009);
        expect((await rpc(base(), 'GetTask', { id: 'task_missing' }, { version: '2.0' })).json.error.code).toBe(-32009);
        expect((await rpc(base(), 'GetTask', { id: 'task_missing' }, { version: '1.0' })).json.error.code).toBe(-32001);
        const q = await raw(base(), '/a2a/jsonrpc?A2A-Version=1.0', { version: null, body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'task_missing' } } });
        expect(q.json.error.code).toBe(-32001);
        const rest = await raw(base(), '/a2a/rest/tasks/task_missing', { version: null });
        expect(rest.status).toBe(400);
        expect(rest.json.error).toMatchObject({ status: 'FAILED_PRECONDITION', details: [{ reason: 'VERSION_NOT_SUPPORTED' }] });
        // The SDK client sends the header on every call; it surfaces a refusal as VersionNotSupportedError.
        const client = await a2aClient(base(), ALICE, 'JSONRPC');
        await expect(client.getTask({ tenant: '', id: 'task_missing' }, { serviceParameters: { 'A2A-Version': '0.3' } })).rejects.toSatisfy(
          (e: unknown) => e instanceof TaskNotFoundError || e instanceof VersionNotSupportedError,
        );
      });

      it('authentication: 401 with a JSON-RPC error body and a challenge; the card stays public', async () => {
        const r = await rpc(base(), 'GetTask', { id: 'x' }, { key: null });
        expect(r.status).toBe(401);
        expect(r.headers.get('www-authenticate')).toContain('Bearer');
        expect(r.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: [{ reason: 'UNAUTHENTICATED', domain: 'belay.dev' }] } });
        const rest = await raw(base(), '/a2a/rest/tasks', { key: 'wrong-key-0123456789abcdef' });
        expect(rest.status).toBe(401);
        expect(rest.json.error.status).toBe('UNAUTHENTICATED');
      });
    });

    it('shares the REST rate limit per principal: 429 with Retry-After on both bindings, the card exempt', async () => {
      const app = createBelayApp({
        service,
        auth: new Authenticator({ apiKeys: KEYS.map(parseApiKeySpec) }),
        rateLimit: { perSecond: 0.01, burst: 2 },
        heartbeatMs: 200,
      });
      const limited = await listen(app.fetch, { port: 0, host: '127.0.0.1' });
      extraServers.push(limited);
      expect((await raw(limited.url, '/v1/agent-tasks')).status).toBe(200);
      expect((await rpc(limited.url, 'GetTask', { id: 'task_missing' })).json.error.code).toBe(-32001);
      const r = await rpc(limited.url, 'GetTask', { id: 'task_missing' });
      expect(r.status).toBe(429);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(r.json.error.data[0]).toMatchObject({ reason: 'RATE_LIMITED', domain: 'belay.dev' });
      const rest = await raw(limited.url, '/a2a/rest/tasks');
      expect(rest.status).toBe(429);
      expect(rest.json.error.status).toBe('RESOURCE_EXHAUSTED');
      // Another principal has its own bucket; the public card is not limited.
      expect((await rpc(limited.url, 'GetTask', { id: 'task_missing' }, { key: MALLORY })).json.error.code).toBe(-32001);
      for (let i = 0; i < 3; i++) expect((await raw(limited.url, '/.well-known/agent-card.json', { key: null, version: null })).status).toBe(200);
    });

    describe('raw HTTP+JSON', () => {
      it('accepts application/json and application/a2a+json, subscribe by GET and by POST, tenant-prefixed routes, 201/204 for push configs', async () => {
        const body = { message: reviewMessage() };
        const a = await raw(base(), '/a2a/rest/message:send', { body, headers: { 'content-type': 'application/a2a+json' } });
        expect(a.status).toBe(200);
        expect(a.headers.get('content-type')).toContain('application/json');
        const id = a.json.task.id;
        expect(a.json.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
        expect((await raw(base(), '/a2a/rest/message:send', { rawBody: JSON.stringify(body), headers: { 'content-type': 'text/plain' } })).status).toBe(415);
        expect((await raw(base(), `/a2a/rest/acme/tasks/${id}`)).json.id).toBe(id);
        const foreign = await raw(base(), `/a2a/rest/globex/tasks/${id}`);
        expect(foreign.status).toBe(404);
        expect(foreign.json.error).toMatchObject({ code: 404, status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] });
        for (const method of ['GET', 'POST']) {
          const ctrl = new AbortController();
          const res = await fetch(`${base()}/a2a/rest/tasks/${id}:subscribe`, { method, headers: { authorization: `Bearer ${ALICE}`, 'a2a-version': '1.0', accept: 'text/event-stream' }, signal: ctrl.signal });
          expect(res.status).toBe(200);
          expect(res.headers.get('content-type')).toContain('text/event-stream');
          const reader = res.body!.getReader();
          const { value } = await reader.read();
          const text = new TextDecoder().decode(value);
          expect(text).toMatch(/^id: \d+\ndata: \{"task":/);
          ctrl.abort();
        }
        const created = await raw(base(), `/a2a/rest/acme/tasks/${id}/pushNotificationConfigs`, { body: { url: 'https://hooks.example.com/x', id: 'x' } });
        expect(created.status).toBe(201);
        expect(created.json).toMatchObject({ id: 'x', taskId: id });
        expect((await raw(base(), `/a2a/rest/tasks/${id}/pushNotificationConfigs/x`, { method: 'DELETE' })).status).toBe(204);
        expect((await raw(base(), '/a2a/rest/nowhere')).json.error.details[0].reason).toBe('METHOD_NOT_FOUND');
        const cancel = await raw(base(), `/a2a/rest/tasks/${id}:cancel`, { method: 'POST' });
        expect(cancel.json.status.state).toBe('TASK_STATE_CANCELED');
      });

      it('a subscription resumed with Last-Event-ID replays the events after it, after the snapshot', async () => {
        const t = (await raw(base(), '/a2a/rest/message:send', { body: { message: reviewMessage() } })).json.task;
        const res = await fetch(`${base()}/a2a/rest/tasks/${t.id}:subscribe`, { headers: { authorization: `Bearer ${ALICE}`, 'a2a-version': '1.0', 'last-event-id': '1' } });
        const reader = res.body!.getReader();
        let text = '';
        while (!text.includes('TASK_STATE_INPUT_REQUIRED"}')) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
          if (/"statusUpdate".*TASK_STATE_INPUT_REQUIRED/.test(text)) break;
        }
        await reader.cancel();
        const frames = text.split('\n\n').filter((f) => f.includes('data:'));
        expect(frames[0]).toContain('"task":');
        const ids = frames.slice(1).map((f) => Number(/^id: (\d+)/m.exec(f)![1]));
        expect(ids[0]).toBe(2);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(frames.slice(1).some((f) => f.includes('TASK_STATE_INPUT_REQUIRED'))).toBe(true);
      });
    });
  });
}
