/**
 * `belay/client` WebhookReceiver against Standard Webhooks vectors (reference §8 S13): signatures made by Belay's
 * signer and by the reference `standardwebhooks` library verify; a tampered body, a wrong key, a partial signature,
 * and timestamps outside ±5 minutes fail; two secrets during a rotation; dedupe acts once, in flight and after failure.
 */
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { InMemoryDedupeStore, WebhookReceiver } from '../../src/client/webhook-receiver.js';
import { generateSecret, sign, signatureHeader } from '../../src/delivery/signing.js';

const NOW = Date.UTC(2026, 5, 1);
const ts = Math.floor(NOW / 1000);
const body = JSON.stringify({ id: 'evt_1_2', type: 'task.completed', timestamp: new Date(NOW).toISOString(), data: { task_id: 'task_1' } });

function headers(secret: string, id = 'evt_1_2', t = ts, b = body) {
  return { 'webhook-id': id, 'webhook-timestamp': String(t), 'webhook-signature': sign(secret, id, t, b) };
}

describe('WebhookReceiver', () => {
  const secret = generateSecret();
  const receiver = new WebhookReceiver({ secret, now: () => NOW });

  it('verifies Belay signatures and the reference library agrees', async () => {
    expect(await receiver.verify(headers(secret), body)).toMatchObject({ id: 'evt_1_2', type: 'task.completed' });
    const realNow = Date.now;
    Date.now = () => NOW;
    try {
      expect(new Webhook(secret).verify(body, headers(secret))).toMatchObject({ id: 'evt_1_2' });
      // And what the reference library signs, the receiver accepts.
      const ref = new Webhook(secret).sign('evt_1_2', new Date(NOW), body);
      expect(await receiver.verify({ 'webhook-id': 'evt_1_2', 'webhook-timestamp': String(ts), 'webhook-signature': ref }, body)).toMatchObject({ id: 'evt_1_2' });
    } finally {
      Date.now = realNow;
    }
  });

  it.each([
    ['a tampered body', () => [headers(secret), body.replace('completed', 'failed')], 'bad_signature'],
    ['a wrong key', () => [headers(generateSecret()), body], 'bad_signature'],
    ['a partial signature', () => [{ ...headers(secret), 'webhook-signature': headers(secret)['webhook-signature'].slice(0, 20) }, body], 'bad_signature'],
    ['an unknown version', () => [{ ...headers(secret), 'webhook-signature': headers(secret)['webhook-signature'].replace('v1,', 'v2,') }, body], 'bad_signature'],
    ['a timestamp 5 min + 1 s old', () => [headers(secret, 'evt_1_2', ts - 301), body], 'timestamp_too_old'],
    ['a timestamp 5 min + 1 s ahead', () => [headers(secret, 'evt_1_2', ts + 301), body], 'timestamp_too_new'],
    ['a missing id', () => [{ ...headers(secret), 'webhook-id': '' }, body], 'missing_headers'],
    ['an id the body does not name', () => [headers(secret, 'evt_other'), body], 'bad_body'],
  ])('refuses %s', async (_name, make, reason) => {
    const [h, b] = make() as [Record<string, string>, string];
    await expect(receiver.verify(h, b)).rejects.toMatchObject({ reason });
  });

  it('accepts timestamps at the edge of the tolerance, and either of two signatures during a rotation', async () => {
    expect(await receiver.verify(headers(secret, 'evt_1_2', ts - 300), body)).toBeTruthy();
    expect(await receiver.verify(headers(secret, 'evt_1_2', ts + 300), body)).toBeTruthy();
    const next = generateSecret();
    const both = signatureHeader([{ secret, createdAt: 0, expiresAt: NOW + 1 }, { secret: next, createdAt: 1, expiresAt: null }], NOW, 'evt_1_2', ts, body);
    expect(both.split(' ')).toHaveLength(2);
    for (const s of [secret, next]) {
      expect(await new WebhookReceiver({ secret: s, now: () => NOW }).verify({ 'webhook-id': 'evt_1_2', 'webhook-timestamp': String(ts), 'webhook-signature': both }, body)).toBeTruthy();
    }
  });

  it('acts once per event id: duplicates are acknowledged, a concurrent copy waits, a failed action is retried', async () => {
    const r = new WebhookReceiver({ secret, now: () => NOW, dedupe: new InMemoryDedupeStore(3600_000, () => NOW) });
    const request = () => new Request('http://x/hook', { method: 'POST', headers: headers(secret), body });
    let acted = 0;
    let release: () => void = () => {};
    const slow = r.handle(request(), () => new Promise<void>((resolve) => { acted++; release = resolve; }));
    await new Promise((res) => setTimeout(res, 10));
    expect((await r.handle(request(), () => { acted++; })).status).toBe(409);
    release();
    expect((await slow).status).toBe(204);
    expect((await r.handle(request(), () => { acted++; })).status).toBe(200);
    expect(acted).toBe(1);
    // A handler that fails releases the id: the redelivery acts.
    const other = new WebhookReceiver({ secret, now: () => NOW });
    expect((await other.handle(request(), () => { throw new Error('db down'); })).status).toBe(500);
    expect((await other.handle(request(), () => { acted++; })).status).toBe(204);
    expect(acted).toBe(2);
    expect((await other.handle(new Request('http://x/hook', { method: 'POST', headers: headers(generateSecret()), body }), () => { acted++; })).status).toBe(401);
  });
});
