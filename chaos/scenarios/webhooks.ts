/**
 * Webhooks (the delivery dispatcher that runs in every gateway and worker process):
 * S11 receivers that fail by script (500, a hang past the timeout, 429 + Retry-After, 410, a redirect): the same
 *     `webhook-id` on every retry, a fresh timestamp, a valid Standard Webhooks signature, the back-off and
 *     Retry-After honoured, 410 disables the target, a redirect is never followed, delivery after recovery;
 * S12 the dispatcher SIGKILLed at `after-webhook-2xx` (the receiver said 2xx, the delivery is not recorded): another
 *     process redelivers with the SAME id, never a different id for the same event;
 * S17 SSRF: loopback, private, link-local, CGNAT, ULA and encoded forms of loopback as callback URLs, push configs
 *     and endpoints: refused (at registration or at connect time), and a loopback canary never hears a packet.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cluster, PRINCIPALS, type ScenarioContext } from '../cluster.js';
import { a2aRpc, rawCall } from '../lib/fronts.js';
import { ok } from '../lib/rest.js';
import { sized, sleep, type Scenario, type ScenarioResult } from '../scenario.js';

interface Hit {
  path: string;
  id: string;
  timestamp: number;
  signature: string;
  body: string;
  at: number;
  status: number;
}

/** A webhook receiver answering by script: `/ok`, `/fail/<n>` (500 n times), `/hang/<n>`, `/throttle/<s>`, `/gone`, `/redirect`. */
class Receiver {
  readonly hits: Hit[] = [];
  private readonly seen = new Map<string, number>();
  private server: Server | null = null;
  url = '';
  constructor(private readonly canaryUrl: string) {}

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '';
        const id = String(req.headers['webhook-id'] ?? '');
        const n = (this.seen.get(`${path}|${id}`) ?? 0) + 1;
        this.seen.set(`${path}|${id}`, n);
        const answer = (status: number, headers: Record<string, string> = {}) => {
          this.hits.push({ path, id, timestamp: Number(req.headers['webhook-timestamp']), signature: String(req.headers['webhook-signature'] ?? ''), body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), status });
          res.writeHead(status, headers);
          res.end();
        };
        const m = /^\/(\w+)(?:\/(\d+))?/.exec(path);
        const kind = m?.[1] ?? 'ok';
        const arg = Number(m?.[2] ?? 0);
        if (kind === 'fail') answer(n <= arg ? 500 : 200);
        else if (kind === 'hang' && n <= arg) setTimeout(() => answer(200), 3000);
        else if (kind === 'throttle') answer(n === 1 ? 429 : 200, n === 1 ? { 'retry-after': String(arg) } : {});
        else if (kind === 'gone') answer(410);
        else if (kind === 'redirect') answer(302, { location: `${this.canaryUrl}/redirected` });
        else answer(200);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** A listener that must never hear anything. */
async function canary(): Promise<{ url: string; port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.end();
  });
  server.on('connection', () => hits.push('connection'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function verify(secret: string, h: Hit): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${h.id}.${h.timestamp}.${h.body}`).digest('base64');
  return h.signature.split(' ').includes(`v1,${mac}`);
}

const WEBHOOK_ENV = { BELAY_WEBHOOK_ALLOWLIST: '127.0.0.1', BELAY_WEBHOOK_TIMEOUT_MS: '1000' };

/** The tenant's callback secrets (whsec_...), as the dispatcher signs with them. */
async function callbackSecrets(base: string): Promise<string[]> {
  const r = await rawCall(`${base}/v1/webhook-callback-secret`, { key: PRINCIPALS.ops1.key, method: 'GET' });
  return ((r.body?.secrets ?? []) as Array<{ secret: string }>).map((s) => s.secret);
}

/** Checks common to every receipt: the id names the event in the body; the signature verifies; the timestamp is fresh. */
function checkHits(hits: Hit[], secrets: string[], fail: (d: string) => void): number {
  let good = 0;
  const idOf = new Map<string, string>();
  for (const h of hits) {
    let body: { id?: string; data?: { task_id?: string; seq?: number } } = {};
    try {
      body = JSON.parse(h.body) as typeof body;
    } catch {
      fail(`a delivery with a body that is not JSON: ${h.body.slice(0, 80)}`);
      continue;
    }
    // The REST notice: { id, type, timestamp, data: { task_id, seq, ... } }; the header id must be the body's.
    const event = `${body.data?.task_id}#${body.data?.seq}`;
    if (body.id !== h.id) fail(`the webhook-id header ${h.id} differs from the payload id ${String(body.id)}`);
    const known = idOf.get(event);
    if (known && known !== h.id) fail(`event ${event} arrived under two ids: ${known} and ${h.id}`);
    idOf.set(event, h.id);
    if (!secrets.some((s) => verify(s, h))) fail(`a delivery of ${h.id} carries no valid signature (${h.signature.slice(0, 40)})`);
    else if (Math.abs(h.timestamp * 1000 - h.at) > 5 * 60_000) fail(`a delivery of ${h.id} carries a stale timestamp ${h.timestamp}`);
    else good += 1;
  }
  return good;
}

export const s11FailingReceivers: Scenario = {
  id: 'S11',
  title: 'webhook receivers failing by script',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const c = await Cluster.start(ctx, 'S11');
    const can = await canary();
    const rx = new Receiver(can.url);
    const fail = (detail: string) => c.violations.push({ invariant: 'S11', detail });
    try {
      await rx.start();
      const gw = await c.spawnGateway({ env: WEBHOOK_ENV });
      await c.spawnWorker({ env: WEBHOOK_ENV });
      const api = c.rest('ops1');
      const behaviours = ['ok', 'fail/1', 'hang/1', 'throttle/7', 'gone', 'redirect'];
      const rounds = sized(ctx.tier, 1, 20);
      const tasks = new Map<string, string>();
      for (let r = 0; r < rounds; r++) {
        for (const b of behaviours) {
          const path = `/${b}${b.includes('/') ? '' : '/0'}/${r}`;
          const created = await api.call('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 1 }, callback_url: `${rx.url}${path}` }, headers: { 'idempotency-key': c.newKey('hook') } });
          if (!ok(created)) fail(`a create with callback ${path} answered ${String(created.status)} ${created.text.slice(0, 160)}`);
          else tasks.set(String(created.body.id), path);
        }
      }
      // The slowest scripted recovery: a 429 asking 7 s, then the retry.
      await sleep(14_000);
      const secrets = await callbackSecrets(gw.readyValue!);
      if (secrets.length === 0) fail('no callback secret to verify signatures with');
      c.ops += checkHits(rx.hits, secrets, fail);
      for (const [taskId, path] of tasks) {
        const hits = rx.hits.filter((h) => h.path === path);
        const byId = new Map<string, Hit[]>();
        for (const h of hits) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);
        const kind = path.split('/')[1]!;
        for (const [id, attempts] of byId) {
          for (let i = 1; i < attempts.length; i++) {
            const gap = attempts[i]!.at - attempts[i - 1]!.at;
            if (attempts[i]!.timestamp < attempts[i - 1]!.timestamp) fail(`retry ${i} of ${id} reused an older timestamp`);
            if (kind === 'fail' && gap < 3500) fail(`${id} was retried ${gap} ms after a 500 (schedule: 5 s ±20 %)`);
            if (kind === 'throttle' && gap < 6500) fail(`${id} was retried ${gap} ms after a 429 asking Retry-After: 7`);
          }
          if (['ok', 'fail', 'hang', 'throttle'].includes(kind) && !attempts.some((h) => h.status >= 200 && h.status < 300)) fail(`${id} (${path}) was never delivered after the receiver recovered (${attempts.length} attempts)`);
          else c.ops += 1;
        }
        if (['ok', 'fail', 'hang', 'throttle'].includes(kind) && byId.size === 0) fail(`task ${taskId} (${path}) got no delivery at all`);
        if (kind === 'gone') {
          const first410 = hits.find((h) => h.status === 410);
          const after = first410 ? hits.filter((h) => h.at > first410.at + 1500) : [];
          if (after.length) fail(`${after.length} deliveries to ${path} after it answered 410 Gone`);
        }
      }
      if (can.hits.length) fail(`a redirect was followed: the canary heard ${can.hits.join(', ')}`);
      else c.ops += 1;
      const { violations } = await c.check({ settled: 'terminal' });
      return { ops: c.ops, minOps: behaviours.length * rounds, violations, recovery: [], notes: [`${rx.hits.length} webhook attempts to ${tasks.size} callbacks (${behaviours.join(', ')}); redirect canary heard ${can.hits.length}`] };
    } finally {
      await rx.close();
      await can.close();
      await c.close();
    }
  },
};

export const s12DispatcherCrash: Scenario = {
  id: 'S12',
  title: 'dispatcher SIGKILL after the receiver said 2xx',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const rounds = sized(ctx.tier, 1, 50);
    const c = await Cluster.start(ctx, 'S12');
    const can = await canary();
    const rx = new Receiver(can.url);
    const fail = (detail: string) => c.violations.push({ invariant: 'S12', detail });
    let crashes = 0;
    let redelivered = 0;
    try {
      await rx.start();
      // The gateway sends nothing: the only dispatchers are the workers, the first of each round armed.
      const gw = await c.spawnGateway({ env: { ...WEBHOOK_ENV, BELAY_WEBHOOKS: 'off' } });
      const api = c.rest('ops1');
      const tasks: string[] = [];
      for (let r = 0; r < rounds; r++) {
        const armed = await c.spawnWorker({ env: WEBHOOK_ENV, crashAt: `after-webhook-2xx:${ctx.rng.int(1, 2)}` });
        for (let i = 0; i < 2; i++) {
          const created = await api.call('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 1 }, callback_url: `${rx.url}/ok/0/${r}` }, headers: { 'idempotency-key': c.newKey('s12') } });
          if (ok(created)) tasks.push(String(created.body.id));
        }
        const exit = await Promise.race([armed.exited, sleep(15_000).then(() => null)]);
        if (exit && armed.hitCrashPoint) crashes += 1;
        else armed.signal('SIGKILL');
        // A clean dispatcher takes the unrecorded delivery once its lease (timeout + margin) lapses.
        const clean = await c.spawnWorker({ env: WEBHOOK_ENV });
        await sleep(9000);
        await clean.kill();
      }
      await c.spawnWorker({ env: WEBHOOK_ENV });
      await sleep(3000);
      const secrets = await callbackSecrets(gw.readyValue!);
      c.ops += checkHits(rx.hits, secrets, fail);
      const byId = new Map<string, number>();
      for (const h of rx.hits) byId.set(h.id, (byId.get(h.id) ?? 0) + 1);
      redelivered = [...byId.values()].filter((n) => n > 1).length;
      for (const id of tasks) {
        for (const kind of ['started', 'completed']) {
          const events = await c.db.store.listEvents(id, 0, 100);
          const e = events.find((x) => x.kind === kind);
          if (!e) continue;
          const want = `evt_${id.replace(/^task_/, '')}_${e.seq}`;
          if (!byId.has(want)) fail(`event ${kind} of ${id} (${want}) was never delivered`);
          else c.ops += 1;
        }
      }
      if (crashes > 0 && redelivered === 0) fail(`${crashes} dispatchers died after a 2xx and nothing was delivered twice: the unrecorded delivery was lost`);
      const { violations } = await c.check({ settled: 'terminal' });
      return { ops: c.ops, minOps: rounds, violations, recovery: [], notes: [`${crashes}/${rounds} dispatchers killed at after-webhook-2xx; ${redelivered} events redelivered under their original id; ${rx.hits.length} attempts`] };
    } finally {
      await rx.close();
      await can.close();
      await c.close();
    }
  },
};

export const s17Ssrf: Scenario = {
  id: 'S17',
  title: 'SSRF: webhook URLs to internal addresses',
  stores: ['sqlite', 'postgres'],
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const c = await Cluster.start(ctx, 'S17');
    const can = await canary();
    const fail = (detail: string) => c.violations.push({ invariant: 'S17', detail });
    const accepted: string[] = [];
    try {
      // No allowlist: only public addresses may be called.
      const gw = await c.spawnGateway({ env: { BELAY_WEBHOOK_TIMEOUT_MS: '1000' } });
      await c.spawnWorker({ env: { BELAY_WEBHOOK_TIMEOUT_MS: '1000' } });
      const base = gw.readyValue!;
      const p = can.port;
      const urls = [
        `http://127.0.0.1:${p}/`,
        `http://2130706433:${p}/`,
        `http://0x7f.1:${p}/`,
        `http://0177.0.0.1:${p}/`,
        `http://127.1:${p}/`,
        `http://0:${p}/`,
        `http://[::1]:${p}/`,
        `http://[::ffff:127.0.0.1]:${p}/`,
        `http://[::ffff:7f00:1]:${p}/`,
        `http://localhost:${p}/`,
        `http://localhost.:${p}/`,
        'http://169.254.169.254/latest/meta-data/',
        'http://100.64.0.1/',
        'http://10.0.0.1/',
        'http://172.16.0.1/',
        'http://192.168.1.1/',
        'http://[fc00::1]/',
        'http://[fe80::1]/',
        'http://[64:ff9b::7f00:1]/',
        'http://[2002:7f00:1::]/',
        'http://224.0.0.1/',
        'http://255.255.255.255/',
      ];
      const api = c.rest('ops1');
      const { taskId: holder } = await c.create(api, 'synthetic', { steps: 1 });
      for (const url of urls) {
        const created = await api.call('POST', '/v1/agent-tasks', { body: { type: 'synthetic', input: { steps: 1 }, callback_url: url }, headers: { 'idempotency-key': c.newKey('ssrf') } });
        if (ok(created)) accepted.push(`callback ${url}`);
        else if (created.status !== 422 && created.status !== 400) fail(`callback ${url} answered ${String(created.status)} ${created.text.slice(0, 120)}`);
        else c.ops += 1;
        if (holder) {
          const pc = await a2aRpc(base, PRINCIPALS.ops1.key, 'CreateTaskPushNotificationConfig', { taskId: holder, url });
          if (pc.body?.result) accepted.push(`push config ${url}`);
          else c.ops += 1;
        }
        const ep = await rawCall(`${base}/v1/webhook-endpoints`, { key: PRINCIPALS.ops1.key, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url }) });
        if (typeof ep.status === 'number' && ep.status >= 200 && ep.status < 300) accepted.push(`endpoint ${url}`);
        else c.ops += 1;
      }
      // Whatever was accepted must be refused at connect time: give the dispatcher time to try.
      await sleep(accepted.length ? 8000 : 2000);
      if (can.hits.length) fail(`the loopback canary heard ${can.hits.length} requests/connections: ${can.hits.slice(0, 3).join(', ')}`);
      else c.ops += 1;
      const { violations } = await c.check({ settled: 'any' });
      return {
        ops: c.ops,
        minOps: urls.length,
        violations,
        recovery: [],
        notes: [`${urls.length} internal URLs x (callback, push config, endpoint); ${accepted.length ? `accepted at registration and left to the connect-time guard: ${accepted.slice(0, 4).join('; ')}${accepted.length > 4 ? '…' : ''}` : 'all refused at registration'}; canary heard ${can.hits.length}`],
      };
    } finally {
      await can.close();
      await c.close();
    }
  },
};
