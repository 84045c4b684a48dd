/**
 * Authentication options beyond API keys, over real sockets: JWTs verified against a JWKS served by a local
 * server, the development no-auth mode, and the in-flight idempotency conflict.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { Authenticator, parseApiKeySpec } from '../../src/protocols/http/auth.js';
import { createBelayApp } from '../../src/server/app.js';
import { listen, type RunningServer } from '../../src/server/http-server.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { sqliteTestStores } from '../helpers/test-stores.js';

describe('authentication', () => {
  const stores = sqliteTestStores();
  let jwks: Server;
  let jwksUrl: string;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  let store: Store;
  let server: RunningServer;

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    jwks = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  });
  afterAll(async () => {
    await new Promise((r) => jwks.close(r));
    await stores.teardown();
  });
  afterEach(async () => {
    await server.close();
    await store.close();
  });

  async function start(auth: Authenticator) {
    store = await stores.open();
    const service = new TaskService({ store, registry: exampleRegistry(new InMemoryDownstream()), clock: systemClock });
    server = await listen(createBelayApp({ service, auth, rateLimit: null }).fetch, { port: 0, host: '127.0.0.1' });
  }

  const token = (claims: Record<string, unknown>, issuer = 'https://idp.example') =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setAudience('belay').setIssuedAt().setExpirationTime('5m').sign(privateKey);

  const call = (path: string, bearer: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', ...(init.headers as Record<string, string>) } });

  it('accepts JWTs verified against the JWKS and scopes them by their tenant claim', async () => {
    await start(new Authenticator({ jwt: { jwksUrl, issuer: 'https://idp.example', audience: 'belay' } }));
    const alice = await token({ sub: 'alice', tenant: 'acme' });
    const created = await call('/v1/agent-tasks', alice, { method: 'POST', body: JSON.stringify({ type: 'synthetic', input: {} }), headers: { 'idempotency-key': 'jwt-1' } });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    expect((await call(`/v1/agent-tasks/${id}`, alice)).status).toBe(200);
    // Same subject name in another tenant: a different principal, the task looks missing.
    expect((await call(`/v1/agent-tasks/${id}`, await token({ sub: 'alice', tenant: 'globex' }))).status).toBe(404);
    // Wrong issuer, no tenant claim, garbage: 401.
    expect((await call(`/v1/agent-tasks/${id}`, await token({ sub: 'alice', tenant: 'acme' }, 'https://evil.example'))).status).toBe(401);
    expect((await call(`/v1/agent-tasks/${id}`, await token({ sub: 'alice' }))).status).toBe(401);
    expect((await call(`/v1/agent-tasks/${id}`, 'a.b.c')).status).toBe(401);
  });

  it('--insecure-no-auth runs everything as one default tenant', async () => {
    await start(new Authenticator({ insecureNoAuth: true }));
    const res = await fetch(`${server.url}/v1/agent-tasks`);
    expect(res.status).toBe(200);
  });

  it('refuses to start with no way to authenticate', () => {
    expect(() => new Authenticator({})).toThrow(/No API keys/);
    expect(() => parseApiKeySpec('short=acme')).toThrow(/16 characters/);
    expect(parseApiKeySpec('0123456789abcdef0=acme')).toMatchObject({ tenant: 'acme', principal: 'acme', role: 'admin' });
    expect(parseApiKeySpec('0123456789abcdef0=acme:bob')).toMatchObject({ principal: 'bob', role: 'member' });
  });

  it('a request whose idempotency key is still in flight on this gateway gets 409; afterwards the key replays', async () => {
    const key = '0123456789abcdef-key';
    await start(new Authenticator({ apiKeys: [parseApiKeySpec(`${key}=acme:alice`)] }));
    // Hold the first create in flight long enough for the others to arrive while it is.
    const create = store.createTask.bind(store);
    store.createTask = async (...args) => {
      await new Promise((r) => setTimeout(r, 300));
      return create(...args);
    };
    const body = JSON.stringify({ type: 'synthetic', input: { steps: 1 } });
    const send = () => call('/v1/agent-tasks', key, { method: 'POST', body, headers: { 'idempotency-key': 'same' } });
    const replies = await Promise.all(Array.from({ length: 8 }, send));
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);
    const conflict = replies.find((r) => r.status === 409)!;
    expect(conflict.headers.get('retry-after')).toBe('1');
    expect(((await conflict.json()) as { code: string }).code).toBe('idempotency_in_flight');
    const ids = new Set(await Promise.all(replies.filter((r) => r.status === 202).map(async (r) => ((await r.json()) as { id: string }).id)));
    expect(ids.size).toBe(1);
    expect((await send()).headers.get('idempotency-replayed')).toBe('true');
  });
});
