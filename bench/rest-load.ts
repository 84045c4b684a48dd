/**
 * REST create load in its own process: autocannon POSTing `{type, input}` with a fresh Idempotency-Key per
 * request. Usage: node rest-load.js <url> <authorization> <connections> <seconds> <type>; prints autocannon's
 * result as one JSON line.
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

const [url, authorization, connections, seconds, type] = process.argv.slice(2);
if (!url || !authorization || !connections || !seconds || !type) throw new Error('usage: rest-load <url> <authorization> <connections> <seconds> <type>');

const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  requests: [
    {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ type, input: {} }),
      setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': randomUUID() } }),
    },
  ],
});
process.stdout.write(`${JSON.stringify(result)}\n`);
