/**
 * @module metrics/registry
 * A small Prometheus text-format (0.0.4) registry: counters, gauges and histograms with labels, plus collectors that
 * read gauges at scrape time. Hand-written instead of prom-client: Belay needs three metric kinds and the exposition
 * format, not a dependency with its own process-wide default registry and default metrics (~100 lines here, and
 * the store-backed gauges are async collectors, which prom-client only offers through its `collect` callbacks).
 *
 * Counters and histograms count what THIS process did (claims, lease losses, step latency, delivery attempts), as
 * Prometheus expects of a scrape target; gauges read from the store (tasks by state, stranded tasks, deliveries by
 * status) describe the whole deployment.
 */

type Labels = Record<string, string>;

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`)
    .join(',');
}

interface Metric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  render(): string[];
}

export class Counter implements Metric {
  readonly type = 'counter';
  private readonly values = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1): void {
    const k = labelKey(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
  render(): string[] {
    if (this.values.size === 0) return [`${this.name} 0`];
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ''} ${v}`);
  }
}

export class Gauge implements Metric {
  readonly type = 'gauge';
  private values = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  set(labels: Labels, value: number): void {
    this.values.set(labelKey(labels), value);
  }
  /** Replaces every series at once (a collector's fresh reading). */
  replace(series: Array<[Labels, number]>): void {
    this.values = new Map(series.map(([l, v]) => [labelKey(l), v]));
  }
  render(): string[] {
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ''} ${v}`);
  }
}

export class Histogram implements Metric {
  readonly type = 'histogram';
  private readonly series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}
  observe(value: number, labels: Labels = {}): void {
    const k = labelKey(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    this.bounds.forEach((b, i) => {
      if (value <= b) s.buckets[i]! += 1;
    });
    s.sum += value;
    s.count += 1;
  }
  count(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.count ?? 0;
  }
  render(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.series) {
      const prefix = k ? `${k},` : '';
      this.bounds.forEach((b, i) => out.push(`${this.name}_bucket{${prefix}le="${b}"} ${s.buckets[i]}`));
      out.push(`${this.name}_bucket{${prefix}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ''} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ''} ${s.count}`);
    }
    return out;
  }
}

export class MetricsRegistry {
  private readonly metrics: Metric[] = [];
  private readonly collectors: Array<() => Promise<void>> = [];

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  gauge(name: string, help: string): Gauge {
    return this.add(new Gauge(name, help));
  }
  histogram(name: string, help: string, bounds: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, bounds));
  }
  /** Runs before each scrape (reads gauges from the store). A failing collector leaves its gauges as they were. */
  collect(fn: () => Promise<void>): void {
    this.collectors.push(fn);
  }

  private add<M extends Metric>(m: M): M {
    this.metrics.push(m);
    return m;
  }

  /** The exposition text (`Content-Type: text/plain; version=0.0.4`). */
  async render(): Promise<string> {
    await Promise.all(this.collectors.map((c) => c().catch(() => undefined)));
    const lines: string[] = [];
    for (const m of this.metrics) {
      lines.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...m.render());
    }
    return `${lines.join('\n')}\n`;
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
