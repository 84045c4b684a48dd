/**
 * @module examples/account-migration
 * The second article's example: classify and migrate N customer records (8,000 by default) in batches of 100, one
 * checkpoint per batch, measured progress. Ambiguous records pause the task with a structured question and a
 * deadline; every write carries a stable action id per record, so a replay never migrates a record twice.
 */
import { z } from 'zod';
import { defineTaskType } from '../runtime/task-type.js';
import type { Downstream } from './downstream.js';

const Input = z.object({
  records: z.number().int().min(0).max(1_000_000).default(8000),
  batchSize: z.number().int().min(1).max(10_000).default(100),
  /** Every n-th record is ambiguous and needs a person's decision (0 = none). */
  ambiguousEvery: z.number().int().min(0).default(2500),
  decisionTimeoutMs: z.number().int().min(1000).max(30 * 24 * 3600_000).default(2 * 24 * 3600_000),
  /** Simulated work per batch (demos); 0 in tests. */
  batchDelayMs: z.number().int().min(0).max(60_000).default(0),
});
type Input = z.infer<typeof Input>;

type Checkpoint = {
  next: number;
  migrated: number;
  skipped: number[];
}

const Decision = z.object({ action: z.enum(['migrate', 'skip']), tier: z.enum(['standard', 'enterprise']).optional() });

export function recordId(i: number): string {
  return `cust-${String(i + 1).padStart(6, '0')}`;
}

function isAmbiguous(i: number, input: Input): boolean {
  return input.ambiguousEvery > 0 && (i + 1) % input.ambiguousEvery === 0;
}

export function accountMigrationType(downstream: Downstream) {
  return defineTaskType<Input, Checkpoint>({
    name: 'account-migration',
    version: 1,
    description: 'Classify and migrate customer records in batches, asking a person about ambiguous records.',
    input: Input,
    initialCheckpoint: () => ({ next: 0, migrated: 0, skipped: [] }),
    onDeadline: 'fail',
    // Every record not yet reached is "never started" in a cancellation or failure report.
    plannedEffects: (cp, input) => Array.from({ length: input.records }, (_, i) => i).filter((i) => !cp.skipped.includes(i)).map((i) => `migrate:${recordId(i)}`),
    // A write that timed out may have happened: look its action id up before writing again.
    reconcilers: {
      migrate: async (effect, key, signal) => {
        const receipt = await downstream.lookup(key, signal);
        return receipt === null ? { applied: false } : { applied: true, result: receipt };
      },
    },
    // After a cancellation, migrated records are moved back, once each.
    compensations: {
      migrate: async (effect, key, signal) => downstream.apply('unmigrate', key, { record: effect.key.slice('migrate:'.length), receipt: effect.result }, signal),
    },
    steps: [
      {
        name: 'migrate-records',
        run: async (ctx) => {
          let cp = ctx.checkpoint;
          const { records, batchSize } = ctx.input;
          ctx.progress(cp.next, records, 'migrating');
          while (cp.next < records) {
            // Cancellation is checked between batches and, through once(), before every write.
            ctx.throwIfStopped();
            if (ctx.input.batchDelayMs > 0) await ctx.clock.sleep(ctx.input.batchDelayMs, ctx.signal);
            const end = Math.min(records, cp.next + batchSize);
            let migrated = cp.migrated;
            const skipped = [...cp.skipped];
            for (let i = cp.next; i < end; i++) {
              let tier: 'standard' | 'enterprise' = i % 10 === 0 ? 'enterprise' : 'standard';
              if (isAmbiguous(i, ctx.input)) {
                // Pauses the task (the batch restarts on resume; writes already made replay from the ledger).
                const decision = ctx.ask(`record-${recordId(i)}`, {
                  question: `Record ${recordId(i)} matches two account tiers. Migrate it, and as which tier?`,
                  schema: Decision,
                  timeoutMs: ctx.input.decisionTimeoutMs,
                  context: { record: recordId(i), candidates: ['standard', 'enterprise'] },
                });
                if (decision.action === 'skip') {
                  skipped.push(i);
                  continue;
                }
                tier = decision.tier ?? tier;
              }
              await ctx.once(`migrate:${recordId(i)}`, (key, signal) => downstream.apply('migrate', key, { record: recordId(i), tier }, signal));
              migrated += 1;
            }
            cp = { next: end, migrated, skipped };
            ctx.progress(end, records, `migrated ${migrated} of ${records} records`);
            if (end < records) await ctx.save(cp);
          }
          return cp;
        },
      },
      {
        name: 'report',
        run: async (ctx) => {
          const cp = ctx.checkpoint;
          ctx.artifact('migration-report', {
            records: ctx.input.records,
            migrated: cp.migrated,
            skipped: cp.skipped.map(recordId),
          });
          return cp;
        },
      },
    ],
    result: (cp, input) => ({ records: input.records, migrated: cp.migrated, skipped: cp.skipped.length }),
  });
}
