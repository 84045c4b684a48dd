/** A thin REST caller for the harness: any live gateway, a timeout per call, 429s waited out, nothing hidden. */

export interface Reply {
  status: number | 'network';
  headers: Headers | null;
  body: any;
  /** The raw text of the answer (problem+json checks). */
  text: string;
  error?: string;
}

export interface CallInit {
  body?: unknown;
  /** Sent as is (malformed payloads). */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** A specific gateway (default: any live one). */
  base?: string;
}

export class Rest {
  constructor(
    private readonly gateways: () => string[],
    readonly key: string,
    readonly tenant: string,
    private readonly pick: <T>(items: readonly T[]) => T,
  ) {}

  base(): string {
    const live = this.gateways();
    if (live.length === 0) throw new Error('no live gateway');
    return this.pick(live);
  }

  async call(method: string, path: string, init: CallInit = {}): Promise<Reply> {
    for (let i = 0; ; i++) {
      const r = await this.once(method, path, init);
      // Rate limiting is the gateway protecting itself, not an outcome: wait and send again (bounded).
      if (r.status === 429 && i < 20) {
        const wait = Number(r.headers?.get('retry-after') ?? '1');
        await new Promise((res) => setTimeout(res, Math.min(2000, Math.max(50, wait * 1000))));
        continue;
      }
      return r;
    }
  }

  private async once(method: string, path: string, init: CallInit): Promise<Reply> {
    let base: string;
    try {
      base = init.base ?? this.base();
    } catch (e) {
      return { status: 'network', headers: null, body: null, text: '', error: (e as Error).message };
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, ...init.headers };
    let body: string | Uint8Array | undefined = init.raw;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(init.timeoutMs ?? 15_000),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // keep the text
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    } catch (e) {
      return { status: 'network', headers: null, body: null, text: '', error: (e as Error).message };
    }
  }
}

export const ok = (r: Reply): boolean => typeof r.status === 'number' && r.status >= 200 && r.status < 300;
