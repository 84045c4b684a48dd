/**
 * S16: malformed, oversized, too-deep, too-wide, duplicate-key, prototype-polluting and badly typed payloads on every
 * front (REST, A2A JSON-RPC and HTTP+JSON, MCP), hand-made and generated with fast-check from the scenario's seed.
 * Pass: never a 5xx; REST errors are problem+json whose `status` is the HTTP status; JSON-RPC errors are JSON-RPC
 * error objects; nothing is persisted by a refused request (the fuzz principal's tasks are exactly the accepted
 * creates); the gateway stays up and small; no prototype pollution shows in later answers.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { Cluster, PRINCIPALS, type ScenarioContext } from '../cluster.js';
import { A2A_HEADERS, mcpSession, randomTaskId, rawCall, type RawReply } from '../lib/fronts.js';
import { sized, type Scenario, type ScenarioResult } from '../scenario.js';

interface Case {
  front: 'rest' | 'a2a-jsonrpc' | 'a2a-rest' | 'mcp';
  label: string;
  method: string;
  path: string;
  body?: string | Uint8Array;
  headers?: Record<string, string>;
  /** A create through REST that may succeed (its task is counted as persisted). */
  creates?: boolean;
}

const enc = new TextEncoder();
const deep = (n: number, leaf = '0') => '['.repeat(n) + leaf + ']'.repeat(n);
const deepObj = (n: number) => '{"a":'.repeat(n) + '0' + '}'.repeat(n);

function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Hand-made bad inputs for each front. */
function handMade(taskId: string): Case[] {
  const create = (label: string, body: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'application/json' }): Case => ({
    front: 'rest',
    label,
    method: 'POST',
    path: '/v1/agent-tasks',
    body,
    headers: { 'idempotency-key': `fuzz-${label}-${Math.random()}`, ...headers },
    creates: true,
  });
  const valid = (input: string) => `{"type":"synthetic","input":${input}}`;
  const big = 'x'.repeat(1_048_577);
  const cases: Case[] = [
    create('1 MiB + 1', valid(`{"pad":"${big}"}`)),
    create('depth 65 (array)', valid(`{"steps":1,"x":${deep(65)}}`)),
    create('depth 65 (object)', valid(`{"steps":1,"x":${deepObj(65)}}`)),
    create('depth 100,000', valid(`{"x":${deep(100_000)}}`)),
    create('array of 100,001', valid(`{"x":[${'0,'.repeat(100_000)}0]}`)),
    create('string of 262,145', valid(`{"x":"${'y'.repeat(262_145)}"}`)),
    create('10,001 keys', valid(`{${Array.from({ length: 10_001 }, (_, i) => `"k${i}":0`).join(',')}}`)),
    create('invalid UTF-8', Uint8Array.from([...enc.encode('{"type":"synthetic","input":{"steps":1,"note":"'), 0xff, 0xfe, 0xc3, ...enc.encode('"}}')])),
    create('duplicate keys (type)', '{"type":"synthetic","type":"no-such-type","input":{}}'),
    create('duplicate keys (input)', '{"type":"synthetic","input":{"steps":1},"input":{"steps":2}}'),
    create('__proto__', valid('{"steps":1,"__proto__":{"polluted":"yes"}}')),
    create('top-level __proto__', '{"type":"synthetic","input":{},"__proto__":{"polluted":"yes"}}'),
    create('constructor.prototype', valid('{"constructor":{"prototype":{"polluted":"yes"}}}')),
    create('text/plain', valid('{}'), { 'content-type': 'text/plain' }),
    create('form', 'type=synthetic', { 'content-type': 'application/x-www-form-urlencoded' }),
    create('no content-type', valid('{}'), {}),
    create('gzip bomb', gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20)), { 'content-type': 'application/json', 'content-encoding': 'gzip' }),
    create('empty', ''),
    create('null', 'null'),
    create('array', '[]'),
    create('string', '"synthetic"'),
    create('1e999', valid('{"steps":1e999}')),
    create('NaN', valid('{"steps":NaN}')),
    create('truncated', '{"type":"synthetic","input":{'),
    create('BOM', '\ufeff' + valid('{}')),
    create('lone surrogate escape', valid('{"x":"\\ud800"}')),
    create('NUL in string', valid('{"x":"a\\u0000b"}')),
    create('wrong type', '{"type":42,"input":{}}'),
    create('unknown type', '{"type":"no-such-type","input":{}}'),
    create('extra member', '{"type":"synthetic","input":{},"admin":true}'),
    create('context_id 129 chars', `{"type":"synthetic","input":{},"context_id":"${'c'.repeat(129)}"}`),
    create('callback_url javascript:', '{"type":"synthetic","input":{},"callback_url":"javascript:alert(1)"}'),
    create('Idempotency-Key 256 chars', valid('{}'), { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(256) }),
    create('Idempotency-Key Latin-1', valid('{}'), { 'content-type': 'application/json', 'idempotency-key': 'cl\u00e9\u00ff' }),
    { front: 'rest', label: 'input: deep answer', method: 'POST', path: `/v1/agent-tasks/${taskId}/input`, body: `{"answer":${deep(100)},"version":1}`, headers: { 'content-type': 'application/json' } },
    { front: 'rest', label: 'input: version string', method: 'POST', path: `/v1/agent-tasks/${taskId}/input`, body: '{"answer":{},"version":"1"}', headers: { 'content-type': 'application/json' } },
    { front: 'rest', label: 'input: oversized', method: 'POST', path: `/v1/agent-tasks/${taskId}/input`, body: `{"answer":"${big}","version":1}`, headers: { 'content-type': 'application/json' } },
    { front: 'rest', label: 'cancel: bad body', method: 'POST', path: `/v1/agent-tasks/${taskId}/cancellation`, body: '{"reason":', headers: { 'content-type': 'application/json' } },
    { front: 'rest', label: 'list: limit -1', method: 'GET', path: '/v1/agent-tasks?limit=-1' },
    { front: 'rest', label: 'list: limit 1e9', method: 'GET', path: '/v1/agent-tasks?limit=1000000000' },
    { front: 'rest', label: 'list: forged cursor', method: 'GET', path: '/v1/agent-tasks?cursor=eyJfX3Byb3RvX18iOnt9fQ' },
    { front: 'rest', label: 'list: bad status', method: 'GET', path: '/v1/agent-tasks?status=__proto__' },
    { front: 'rest', label: 'list: bad time', method: 'GET', path: '/v1/agent-tasks?created_after=yesterday' },
    { front: 'rest', label: 'events: after -5', method: 'GET', path: `/v1/agent-tasks/${taskId}/events?after=-5` },
    { front: 'rest', label: 'events: Last-Event-ID junk', method: 'GET', path: `/v1/agent-tasks/${taskId}/events`, headers: { accept: 'text/event-stream', 'last-event-id': '1; DROP TABLE' } },
    { front: 'rest', label: 'task id 10 kB', method: 'GET', path: `/v1/agent-tasks/${'t'.repeat(10_000)}` },
    { front: 'rest', label: 'task id with SQL', method: 'GET', path: `/v1/agent-tasks/${encodeURIComponent("x' OR '1'='1")}` },
  ];
  const rpc = (label: string, body: string | Uint8Array, headers: Record<string, string> = A2A_HEADERS): Case => ({ front: 'a2a-jsonrpc', label, method: 'POST', path: '/a2a/jsonrpc', body, headers });
  cases.push(
    rpc('oversized', `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"${big}"}}`),
    rpc('deep params', `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":${deepObj(100_000)}}`),
    rpc('batch', '[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]'),
    rpc('no method', '{"jsonrpc":"2.0","id":1}'),
    rpc('unknown method', '{"jsonrpc":"2.0","id":1,"method":"__proto__","params":{}}'),
    rpc('method constructor', '{"jsonrpc":"2.0","id":1,"method":"constructor","params":{}}'),
    rpc('params array', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1,2]}'),
    rpc('id object', '{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask","params":{"id":"x"}}'),
    rpc('duplicate method', '{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask","params":{"id":"x"}}'),
    rpc('__proto__ params', '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"__proto__":{"polluted":"yes"},"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},"configuration":{"returnImmediately":true}}}'),
    rpc('parts 101', `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[${Array.from({ length: 101 }, () => '{"text":"x"}').join(',')}]}}}`),
    rpc('invalid UTF-8', Uint8Array.from([...enc.encode('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"'), 0xff, ...enc.encode('"}}')])),
    rpc('no version header', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}', { 'content-type': 'application/json' }),
    rpc('text/plain', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}', { 'content-type': 'text/plain', 'a2a-version': '1.0' }),
    rpc('garbage', '{{{{'),
    { front: 'a2a-rest', label: 'message:send deep', method: 'POST', path: '/a2a/rest/message:send', body: `{"message":${deepObj(1000)}}`, headers: A2A_HEADERS },
    { front: 'a2a-rest', label: 'message:send oversized', method: 'POST', path: '/a2a/rest/message:send', body: `{"message":{"messageId":"${big}"}}`, headers: A2A_HEADERS },
    { front: 'a2a-rest', label: 'tasks bad pageSize', method: 'GET', path: '/a2a/rest/tasks?pageSize=-1', headers: A2A_HEADERS },
    { front: 'a2a-rest', label: 'tasks forged pageToken', method: 'GET', path: '/a2a/rest/tasks?pageToken=%00%ff', headers: A2A_HEADERS },
    { front: 'mcp', label: 'initialize deep', method: 'POST', path: '/mcp', body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":${deepObj(100_000)}}`, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
    { front: 'mcp', label: 'oversized', method: 'POST', path: '/mcp', body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"${big}"}}`, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
    { front: 'mcp', label: 'garbage', method: 'POST', path: '/mcp', body: '}{', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
    { front: 'mcp', label: 'unknown session', method: 'POST', path: '/mcp', body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'nope', 'mcp-protocol-version': '2025-11-25' } },
  );
  return cases;
}

/** Generated cases: random JSON bodies, mutated valid bodies, random text, random headers and query strings. */
function generated(taskId: string, seed: number, n: number): Case[] {
  const json = fc.jsonValue({ maxDepth: 6 });
  const nasty = fc.oneof(
    json,
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty').map((k) => JSON.parse(`{"${k}":{"polluted":"yes"}}`) as unknown),
    fc.string({ unit: 'binary', maxLength: 200 }),
  );
  const createBody = fc.record({ type: fc.oneof(fc.constant('synthetic'), fc.string({ maxLength: 70 })), input: fc.oneof(nasty, fc.dictionary(fc.string({ maxLength: 12 }), nasty, { maxKeys: 6 })) }, { requiredKeys: [] });
  const arb = fc.oneof(
    createBody.map((b): Case => ({ front: 'rest', label: 'generated create', method: 'POST', path: '/v1/agent-tasks', body: JSON.stringify(b), headers: { 'content-type': 'application/json', 'idempotency-key': `gen-${Math.random()}` }, creates: true })),
    fc.string({ unit: 'binary', maxLength: 300 }).map((t): Case => ({ front: 'rest', label: 'generated text', method: 'POST', path: '/v1/agent-tasks', body: t, headers: { 'content-type': 'application/json', 'idempotency-key': `gen-${Math.random()}` }, creates: true })),
    fc.string({ unit: 'grapheme', maxLength: 300 }).map((k): Case => ({ front: 'rest', label: 'generated Idempotency-Key', method: 'POST', path: '/v1/agent-tasks', body: '{"type":"synthetic","input":{}}', headers: { 'content-type': 'application/json', 'idempotency-key': encodeURIComponent(k) || 'x' }, creates: true })),
    fc.record({ answer: nasty, version: fc.oneof(fc.integer(), json), key: fc.oneof(fc.string({ maxLength: 80 }), json) }, { requiredKeys: [] }).map((b): Case => ({ front: 'rest', label: 'generated input', method: 'POST', path: `/v1/agent-tasks/${taskId}/input`, body: JSON.stringify(b), headers: { 'content-type': 'application/json' } })),
    fc.dictionary(fc.constantFrom('limit', 'cursor', 'status', 'type', 'created_after', 'created_before', 'after'), fc.string({ maxLength: 40 }), { maxKeys: 4 }).map((q): Case => ({ front: 'rest', label: 'generated query', method: 'GET', path: `/v1/agent-tasks?${new URLSearchParams(q).toString()}` })),
    fc.string({ maxLength: 40 }).map((a): Case => ({ front: 'rest', label: 'generated events cursor', method: 'GET', path: `/v1/agent-tasks/${taskId}/events?${new URLSearchParams({ after: a }).toString()}` })),
    fc.record({ jsonrpc: fc.oneof(fc.constant('2.0'), json), id: fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), json), method: fc.oneof(fc.constantFrom('GetTask', 'CancelTask', 'ListTasks', 'SubscribeToTask', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs'), fc.string({ maxLength: 30 })), params: nasty }, { requiredKeys: [] }).map(
      (b): Case => ({ front: 'a2a-jsonrpc', label: 'generated JSON-RPC', method: 'POST', path: '/a2a/jsonrpc', body: JSON.stringify(b), headers: A2A_HEADERS }),
    ),
    fc.record({ message: nasty, configuration: fc.constant({ returnImmediately: true }) }).map((b): Case => ({ front: 'a2a-rest', label: 'generated message:send', method: 'POST', path: '/a2a/rest/message:send', body: JSON.stringify(b), headers: A2A_HEADERS })),
    fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.oneof(fc.constantFrom('initialize', 'tools/list', 'tools/call', 'tasks/get', 'tasks/list'), fc.string({ maxLength: 20 })), params: nasty }, { requiredKeys: [] }).map(
      (b): Case => ({ front: 'mcp', label: 'generated MCP', method: 'POST', path: '/mcp', body: JSON.stringify(b), headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }),
    ),
  );
  return fc.sample(arb, { seed, numRuns: n });
}

export const s16Payloads: Scenario = {
  id: 'S16',
  title: 'malformed and oversized payloads (all fronts)',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const n = sized(ctx.tier, 600, 50_000);
    const c = await Cluster.start(ctx, 'S16');
    const fail = (detail: string) => c.violations.push({ invariant: 'S16', detail });
    try {
      const gw = await c.spawnGateway();
      const base = gw.readyValue!;
      const key = PRINCIPALS.ops4.key;
      // A task to aim inputs and event reads at (nobody runs it: no worker in this scenario).
      const { taskId } = await c.create(c.rest('ops1'), 'synthetic', { steps: 1 });
      const target = taskId ?? randomTaskId();
      const mcp = await mcpSession(base, key);
      const cases = [...handMade(target), ...generated(target, ctx.seed, n)];
      if (mcp) {
        for (const cs of cases) if (cs.front === 'mcp' && !cs.label.includes('unknown session')) cs.headers = { ...cs.headers, 'mcp-session-id': mcp.id, 'mcp-protocol-version': '2025-11-25' };
      }
      const accepted = new Set<string>();
      const findings = { duplicateKeys: 0 };
      const byFront: Record<string, number> = {};
      let peakRss = 0;
      for (const cs of cases) {
        const r: RawReply = await rawCall(`${base}${cs.path}`, { key, method: cs.method, ...(cs.headers ? { headers: cs.headers } : {}), ...(cs.body !== undefined ? { body: cs.body } : {}), timeoutMs: 10_000 });
        byFront[cs.front] = (byFront[cs.front] ?? 0) + 1;
        const status = r.status;
        const where = `${cs.front} ${cs.label} (${cs.method} ${cs.path.slice(0, 60)})`;
        if (status === 'network') {
          if (!gw.alive) {
            fail(`the gateway died on ${where}: ${gw.stderr().slice(-400)}`);
            break;
          }
          fail(`no answer to ${where}: ${r.text}`);
          continue;
        }
        if (status >= 500) {
          fail(`${status} on ${where}: ${r.text.slice(0, 300)}`);
          continue;
        }
        if (cs.front === 'rest' && status >= 400) {
          const problem = r.contentType.startsWith('application/problem+json') && r.body && r.body.status === status && typeof r.body.code === 'string' && typeof r.body.type === 'string';
          if (!problem) fail(`${status} on ${where} is not problem+json with a matching status: ${r.contentType} ${r.text.slice(0, 200)}`);
          else c.ops += 1;
        } else if ((cs.front === 'a2a-jsonrpc' || cs.front === 'mcp') && r.body && typeof r.body === 'object' && 'error' in r.body) {
          const e = r.body.error;
          if (!e || typeof e.code !== 'number' || typeof e.message !== 'string') fail(`${where}: malformed JSON-RPC error ${r.text.slice(0, 200)}`);
          else c.ops += 1;
        } else c.ops += 1;
        if (cs.creates && status >= 200 && status < 300 && r.body?.id) {
          accepted.add(String(r.body.id));
          if (cs.label.startsWith('duplicate keys')) findings.duplicateKeys += 1;
          // Refused since 4c4cb70 (bytes used to be replaced by U+FFFD and stored): accepting it again is a regression.
          if (cs.label === 'invalid UTF-8') fail('a create with invalid UTF-8 was accepted (the stored input differs from what was sent)');
        }
        if (c.ops % 100 === 0) peakRss = Math.max(peakRss, rssMb(gw.pid) ?? 0);
      }
      peakRss = Math.max(peakRss, rssMb(gw.pid) ?? 0);
      if (peakRss > 512) fail(`the gateway grew to ${Math.round(peakRss)} MB`);
      const health = await rawCall(`${base}/healthz`, { key, method: 'GET' });
      if (health.status !== 200) fail(`the gateway is not healthy after the fuzz: ${String(health.status)}`);
      // No pollution: a fresh task's representation and the task types carry nothing they were not given.
      const fresh = await c.create(c.rest('ops1'), 'synthetic', { steps: 1 });
      const view = await rawCall(`${base}/v1/agent-tasks/${fresh.taskId}`, { key, method: 'GET' });
      const types = await rawCall(`${base}/v1/task-types`, { key, method: 'GET' });
      if (view.text.includes('polluted') || types.text.includes('polluted')) fail('"polluted" shows up in an answer that never received it: prototype pollution');
      // Nothing persisted for a refused request: the fuzz principal's tasks are exactly the accepted creates.
      const persisted = (await c.db.store.listTasks({ tenant: 'acme', createdBy: 'ops4', limit: 100_000 })).map((t) => t.id);
      const unexpected = persisted.filter((id) => !accepted.has(id));
      if (unexpected.length) fail(`${unexpected.length} tasks persisted by requests that were refused or never answered 2xx: ${unexpected.slice(0, 3).join(', ')}`);
      const { violations } = await c.check({ settled: 'any' });
      return {
        ops: c.ops,
        minOps: Math.floor(cases.length * 0.9),
        violations,
        recovery: [],
        notes: [
          `${cases.length} payloads (${Object.entries(byFront).map(([f, k]) => `${f} ${k}`).join(', ')}), ${accepted.size} accepted creates, gateway peak RSS ${Math.round(peakRss)} MB`,
          ...(findings.duplicateKeys ? [`finding: ${findings.duplicateKeys} bodies with duplicate member names were accepted (JSON.parse keeps the last; RFC 8259 leaves it undefined)`] : []),
        ],
      };
    } finally {
      await c.close();
    }
  },
};
