/**
 * Figures: one JSON line each on stdout, exactly `{"figure","store","workers","value","unit","baseline",
 * "baseline_name","ratio"}` (ratio = value / baseline), and a table for people on stderr at the end.
 */
import { appendFileSync, writeFileSync } from 'node:fs';

export interface Figure {
  figure: string;
  store: string;
  workers: number;
  value: number;
  unit: string;
  baseline: number | null;
  baseline_name: string;
  ratio: number | null;
}

/** Rounds to 3 significant digits after the point for small values, whole numbers for large ones. */
export function round(v: number): number {
  if (!Number.isFinite(v)) return v;
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v);
  if (a >= 100) return Math.round(v * 10) / 10;
  if (a >= 1) return Math.round(v * 100) / 100;
  return Math.round(v * 10_000) / 10_000;
}

export class Report {
  readonly figures: Figure[] = [];
  readonly notes: string[] = [];

  constructor(private readonly out: string | null) {
    if (out) writeFileSync(out, '');
  }

  add(f: { figure: string; store: string; workers: number; value: number; unit: string; baseline: number | null; baselineName: string }): Figure {
    const fig: Figure = {
      figure: f.figure,
      store: f.store,
      workers: f.workers,
      value: round(f.value),
      unit: f.unit,
      baseline: f.baseline === null ? null : round(f.baseline),
      baseline_name: f.baselineName,
      ratio: f.baseline === null || f.baseline === 0 ? null : Math.round((f.value / f.baseline) * 1000) / 1000,
    };
    this.figures.push(fig);
    const line = JSON.stringify(fig);
    process.stdout.write(`${line}\n`);
    if (this.out) appendFileSync(this.out, `${line}\n`);
    return fig;
  }

  note(text: string): void {
    this.notes.push(text);
    log(text);
  }

  table(): string {
    const head = ['figure', 'store', 'workers', 'value', 'unit', 'baseline', 'baseline name', 'ratio'];
    const rows = this.figures.map((f) => [
      f.figure,
      f.store,
      String(f.workers),
      String(f.value),
      f.unit,
      f.baseline === null ? '-' : String(f.baseline),
      f.baseline_name,
      f.ratio === null ? '-' : f.ratio.toFixed(3),
    ]);
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 3 || i === 5 || i === 7 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
    return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
  }
}

/** Progress for people, on stderr (stdout carries only the JSON lines). */
export function log(text: string): void {
  process.stderr.write(`${text}\n`);
}
