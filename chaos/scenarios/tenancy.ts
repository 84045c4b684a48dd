/**
 * S15: the cross-tenant matrix. Another tenant's principals (a member and an admin) and a same-tenant member who did
 * not create the task call every task route of every front (REST; A2A JSON-RPC and HTTP+JSON; MCP 2025-11-25
 * tasks/*) with the victim's ids — a waiting task, a finished task, an expired one, a push config — and every
 * answer must equal, byte for byte after masking the id, the answer for a random id that names nothing. Lists never
 * show the victim's tasks, and nothing about the victim's tasks changes.
 */
import { Cluster, PRINCIPALS, type PrincipalName, type ScenarioContext } from '../cluster.js';
import { a2aRest, a2aRpc, mcpSession, normalized, randomTaskId, rawCall, type RawReply } from '../lib/fronts.js';
import { sleep, type Scenario, type ScenarioResult } from '../scenario.js';

type Probe = { front: string; name: string; call: (base: string, key: string, id: string) => Promise<RawReply> };

function restProbes(version: () => number): Probe[] {
  const r = (name: string, method: string, path: (id: string) => string, extra: { body?: unknown; headers?: Record<string, string> } = {}): Probe => ({
    front: 'rest',
    name,
    call: (base, key, id) =>
      rawCall(`${base}${path(id)}`, {
        key,
        method,
        headers: { ...(extra.body !== undefined ? { 'content-type': 'application/json' } : {}), ...extra.headers },
        ...(extra.body !== undefined ? { body: JSON.stringify(extra.body) } : {}),
        timeoutMs: 5000,
      }),
  });
  const t = (id: string) => `/v1/agent-tasks/${id}`;
  return [
    r('get', 'GET', t),
    r('get operator view', 'GET', (id) => `${t(id)}?view=operator`),
    r('events page', 'GET', (id) => `${t(id)}/events`),
    r('events after', 'GET', (id) => `${t(id)}/events?after=1&limit=5`),
    r('events SSE', 'GET', (id) => `${t(id)}/events`, { headers: { accept: 'text/event-stream' } }),
    r('events SSE Last-Event-ID', 'GET', (id) => `${t(id)}/events`, { headers: { accept: 'text/event-stream', 'last-event-id': '1' } }),
    { ...r('input', 'POST', (id) => `${t(id)}/input`), call: (base, key, id) => rawCall(`${base}${t(id)}/input`, { key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ answer: { ok: true }, version: version() }), timeoutMs: 5000 }) },
    r('early input', 'POST', (id) => `${t(id)}/input`, { body: { answer: { ok: true }, version: 1, key: 'step-1' } }),
    r('cancellation', 'POST', (id) => `${t(id)}/cancellation`),
    r('result', 'GET', (id) => `${t(id)}/result`),
    r('effects', 'GET', (id) => `${t(id)}/effects`),
  ];
}

function a2aProbes(configId: string): Probe[] {
  const rpc = (name: string, method: string, params: (id: string) => unknown): Probe => ({ front: 'a2a-jsonrpc', name, call: (base, key, id) => a2aRpc(base, key, method, params(id), 5000) });
  const rest = (name: string, method: string, path: (id: string) => string, body?: (id: string) => unknown): Probe => ({
    front: 'a2a-rest',
    name,
    call: (base, key, id) => a2aRest(base, key, method, path(id), body?.(id), 5000),
  });
  return [
    rpc('GetTask', 'GetTask', (id) => ({ id })),
    rpc('GetTask history', 'GetTask', (id) => ({ id, historyLength: 10 })),
    rpc('CancelTask', 'CancelTask', (id) => ({ id })),
    rpc('SubscribeToTask', 'SubscribeToTask', (id) => ({ id })),
    rpc('SendMessage continuing the task', 'SendMessage', (id) => ({ message: { messageId: `probe-${id}`, role: 'ROLE_USER', parts: [{ text: 'continue' }], taskId: id } })),
    rpc('CreateTaskPushNotificationConfig', 'CreateTaskPushNotificationConfig', (id) => ({ taskId: id, url: 'https://example.com/hook' })),
    rpc('GetTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', (id) => ({ taskId: id, id: configId })),
    rpc('ListTaskPushNotificationConfigs', 'ListTaskPushNotificationConfigs', (id) => ({ taskId: id })),
    rpc('DeleteTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig', (id) => ({ taskId: id, id: configId })),
    rest('GET task', 'GET', (id) => `/tasks/${id}`),
    rest('cancel', 'POST', (id) => `/tasks/${id}:cancel`, () => ({})),
    rest('subscribe', 'POST', (id) => `/tasks/${id}:subscribe`, () => ({})),
    rest('create push config', 'POST', (id) => `/tasks/${id}/pushNotificationConfigs`, () => ({ url: 'https://example.com/hook' })),
    rest('list push configs', 'GET', (id) => `/tasks/${id}/pushNotificationConfigs`),
    rest('get push config', 'GET', (id) => `/tasks/${id}/pushNotificationConfigs/${configId}`),
    rest('delete push config', 'DELETE', (id) => `/tasks/${id}/pushNotificationConfigs/${configId}`),
  ];
}

export const s15CrossTenant: Scenario = {
  id: 'S15',
  title: 'cross-tenant matrix (REST, A2A, MCP)',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const c = await Cluster.start(ctx, 'S15');
    const fail = (detail: string, taskId?: string) => c.violations.push({ invariant: 'S15', detail, ...(taskId ? { taskId } : {}) });
    const fronts = new Set<string>();
    try {
      const gw = await c.spawnGateway();
      const base = gw.readyValue!;
      await c.spawnWorker();
      const alice = c.rest('alice');
      // The victim's tasks: one expired, one finished, one waiting for input.
      const make = async (input: Record<string, unknown>) => (await c.create(alice, 'synthetic', { effectsPerStep: 1, effectUrl: c.downstream.effectUrl, ...input })).taskId;
      const expired = await make({ steps: 1 });
      const waitFor = async (id: string, state: string) => {
        for (let i = 0; i < 300; i++) {
          const t = await c.db.store.getTask(id);
          if (t?.state === state) return t;
          await sleep(30);
        }
        throw new Error(`task ${id} never reached ${state}`);
      };
      if (!expired) throw new Error('could not create the victim tasks');
      await waitFor(expired, 'completed');
      await c.db.store.expireTasks(Date.now() + 40 * 24 * 3600_000, 100);
      const finished = (await make({ steps: 1 }))!;
      const waiting = (await make({ steps: 2, askAtStep: 1 }))!;
      await waitFor(finished, 'completed');
      let victim = await waitFor(waiting, 'input_required');
      // Push config ids are probed with an id that exists nowhere: a real config needs a public URL (the SSRF guard
      // refuses loopback), and the harness sends nothing off this machine.
      const configId = 'victim-config';
      const owner410 = await rawCall(`${base}/v1/agent-tasks/${expired}`, { key: PRINCIPALS.alice.key, method: 'GET' });
      if (owner410.status !== 410) fail(`the owner of an expired task got ${String(owner410.status)} (expected 410 Gone)`, expired);
      else c.ops += 1;
      const before = { finished: (await c.db.store.getTask(finished))!, waiting: victim };

      const probes: Probe[] = [...restProbes(() => victim.version), ...a2aProbes(configId)];
      const intruders: PrincipalName[] = ['mallory', 'gops', 'bob'];
      for (const who of intruders) {
        const key = PRINCIPALS[who].key;
        const mcp = await mcpSession(base, key);
        const all: Probe[] = [...probes];
        if (mcp) {
          for (const [name, method] of [['tasks/get', 'tasks/get'], ['tasks/result', 'tasks/result'], ['tasks/cancel', 'tasks/cancel']] as const) {
            all.push({ front: 'mcp', name, call: (_b, _k, id) => mcp.call(method, { taskId: id }) });
          }
        } else fail(`could not open an MCP session as ${who}`);
        for (const target of [waiting, finished, expired]) {
          for (const p of all) {
            fronts.add(p.front);
            const missing = randomTaskId();
            const [foreign, none] = [await p.call(base, key, target), await p.call(base, key, missing)];
            const a = normalized(foreign, target);
            const b = normalized(none, missing);
            if (typeof foreign.status === 'number' && foreign.status >= 200 && foreign.status < 300 && !(foreign.body?.error)) fail(`${who} ${p.front} ${p.name} on another's task answered ${foreign.status}: ${foreign.text.slice(0, 200)}`, target);
            else if (a !== b) fail(`${who} ${p.front} ${p.name}: a foreign task answers differently from a missing one:\n      foreign: ${a.slice(0, 300)}\n      missing: ${b.slice(0, 300)}`, target);
            else c.ops += 1;
          }
        }
        // Lists never show the victim's tasks.
        const lists: Array<[string, RawReply]> = [
          ['rest list', await rawCall(`${base}/v1/agent-tasks?limit=100`, { key, method: 'GET' })],
          ['a2a ListTasks', await a2aRpc(base, key, 'ListTasks', {})],
          ['a2a-rest list', await a2aRest(base, key, 'GET', '/tasks')],
          ...(mcp ? ([['mcp tasks/list', await mcp.call('tasks/list', {})]] as Array<[string, RawReply]>) : []),
        ];
        for (const [name, reply] of lists) {
          const leaked = [waiting, finished, expired].filter((id) => reply.text.includes(id));
          if (leaked.length) fail(`${who} ${name} shows the victim's tasks ${leaked.join(', ')}`);
          else c.ops += 1;
        }
      }
      // Nothing changed on the victim's side.
      victim = (await c.db.store.getTask(waiting))!;
      const fin = (await c.db.store.getTask(finished))!;
      if (victim.state !== 'input_required' || victim.version !== before.waiting.version || victim.nextSeq !== before.waiting.nextSeq) {
        fail(`the waiting task changed under the intruders: ${before.waiting.state} v${before.waiting.version} -> ${victim.state} v${victim.version}`, waiting);
      }
      if (fin.version !== before.finished.version || fin.nextSeq !== before.finished.nextSeq) fail('the finished task changed under the intruders', finished);
      // The owner can still answer: the task completes.
      await c.answer(alice, waiting, victim.version, { ok: true });
      const settled = await c.settle(30_000);
      const { violations } = await c.check({ settled: 'terminal' });
      if (!settled) violations.push({ invariant: 'I6', detail: 'tasks did not settle within 30 s' });
      return {
        ops: c.ops,
        minOps: 3 * 3 * probes.length,
        violations,
        recovery: [],
        notes: [`${intruders.length} intruders x 3 tasks (waiting, finished, expired) x ${probes.length + 3} routes over ${[...fronts].join(', ')}, each answer compared with a random id's`],
      };
    } finally {
      await c.close();
    }
  },
};
