/** The shape of a scorecard scenario and helpers every scenario uses. */
import type { Violation } from './history.js';
import type { StoreKind } from './lib/db.js';
import type { ScenarioContext, Tier } from './cluster.js';

export interface ScenarioResult {
  /** Operations that succeeded (acknowledged creates, accepted answers, cancellations, checks that held...). */
  ops: number;
  /** Fewer successful operations than this fails the scenario: a run where everything errored cannot pass. */
  minOps: number;
  violations: Violation[];
  /** Recovery times (ms) where the scenario has a notion of recovery. */
  recovery: number[];
  /** Counters and findings worth a glance, printed after the scorecard line. */
  notes: string[];
}

export interface Scenario {
  id: string;
  title: string;
  stores: readonly StoreKind[];
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function sized(tier: Tier, quick: number, full: number): number {
  return tier === 'full' ? full : quick;
}

export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
