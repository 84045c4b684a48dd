/** A small seeded PRNG (mulberry32): a failing run prints its seed, and the same seed replays the same schedule. */
export class Rng {
  private s: number;

  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }

  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A child generator for an independent stream (a client, a nemesis). */
  fork(): Rng {
    return new Rng(Math.floor(this.next() * 2 ** 32));
  }
}

/** Derives a scenario's seed from the run seed and its name, so one run seed reproduces every scenario. */
export function deriveSeed(base: number, name: string): number {
  let h = (base ^ 0x9e3779b9) >>> 0;
  for (const ch of name) {
    h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  }
  return h % 1_000_000_007;
}
