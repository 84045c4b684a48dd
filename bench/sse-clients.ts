/**
 * SSE subscribers for the fan-out figure, in their own process so the server's event loop is not also parsing.
 * Usage: node sse-clients.js <url> <count> <authorization|-> <afterSeq>
 * Opens `count` event streams on `url` (Last-Event-ID = afterSeq), prints `READY` once every stream has its
 * preamble, records the arrival time (performance.timeOrigin + now(), sub-millisecond epoch ms) of every event id,
 * and on `DONE <lastSeq>` on stdin waits until every stream has that id (10 s at most), then prints one JSON line
 * `{"<seq>": [arrival times...]}` and exits.
 */
import http from 'node:http';

const [url, countArg, auth, afterArg] = process.argv.slice(2);
if (!url || !countArg || !auth || !afterArg) throw new Error('usage: sse-clients <url> <count> <authorization|-> <afterSeq>');
const count = Number(countArg);
const arrivals = new Map<number, number[]>();
const lastSeen: number[] = [];
let ready = 0;
const requests: http.ClientRequest[] = [];
const now = () => performance.timeOrigin + performance.now();

for (let i = 0; i < count; i++) {
  lastSeen.push(Number(afterArg));
  const headers: Record<string, string> = { accept: 'text/event-stream', 'last-event-id': afterArg };
  if (auth !== '-') headers.authorization = auth;
  const req = http.get(url, { headers, agent: false }, (res) => {
    if (res.statusCode !== 200) {
      process.stderr.write(`stream ${i}: HTTP ${res.statusCode}\n`);
      process.exit(1);
    }
    res.setEncoding('utf8');
    let buf = '';
    let counted = false;
    res.on('data', (chunk: string) => {
      const at = now();
      buf += chunk;
      for (let k = buf.indexOf('\n\n'); k >= 0; k = buf.indexOf('\n\n')) {
        const frame = buf.slice(0, k);
        buf = buf.slice(k + 2);
        if (!counted && frame.includes('retry:')) {
          counted = true;
          if (++ready === count) process.stdout.write('READY\n');
        }
        const m = /^id: (\d+)$/m.exec(frame);
        if (m) {
          const seq = Number(m[1]);
          lastSeen[i] = Math.max(lastSeen[i]!, seq);
          let list = arrivals.get(seq);
          if (!list) arrivals.set(seq, (list = []));
          list.push(at);
        }
      }
    });
  });
  req.on('error', (e) => {
    process.stderr.write(`stream ${i}: ${e.message}\n`);
    process.exit(1);
  });
  requests.push(req);
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  input += d;
  const m = /DONE (\d+)/.exec(input);
  if (!m) return;
  const last = Number(m[1]);
  const deadline = Date.now() + 10_000;
  const finish = () => {
    if (lastSeen.some((s) => s < last) && Date.now() < deadline) {
      setTimeout(finish, 10);
      return;
    }
    for (const r of requests) r.destroy();
    // Exit only once the (large) line is flushed: a pipe write is asynchronous and exit() would cut it.
    process.stdout.write(`${JSON.stringify(Object.fromEntries(arrivals))}\n`, () => process.exit(0));
  };
  finish();
});
