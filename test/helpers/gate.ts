/** A promise a test opens by hand, to hold a step or a downstream call at a known point. */
export class Gate {
  private openFn: () => void = () => {};
  readonly opened: Promise<void>;
  private arrivedFn: () => void = () => {};
  /** Resolves when something first waits on the gate. */
  readonly arrived: Promise<void>;
  isOpen = false;

  constructor() {
    this.opened = new Promise((r) => (this.openFn = r));
    this.arrived = new Promise((r) => (this.arrivedFn = r));
  }

  wait(): Promise<void> {
    this.arrivedFn();
    return this.opened;
  }

  open(): void {
    this.isOpen = true;
    this.openFn();
  }
}

/** Polls until `check` holds (real time, bounded): for waiting on another process or a notification. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
