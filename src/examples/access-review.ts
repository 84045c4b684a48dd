/**
 * @module examples/access-review
 * The first article's worked example: review access to N systems (40 by default), ask the owners to approve the
 * proposed revocations (14 by default), apply each approved revocation exactly once, and write a report.
 * Fetching grants commits once per system, so a crash at system 23 resumes at system 23.
 */
import { z } from 'zod';
import type { Json } from '../core/task.js';
import { defineTaskType } from '../runtime/task-type.js';
import type { StepContext } from '../runtime/step-context.js';
import type { Downstream } from './downstream.js';

const Input = z.object({
  systems: z.number().int().min(1).max(1000).default(40),
  revocations: z.number().int().min(0).max(10_000).default(14),
  /** Time the owners have to answer. */
  approvalTimeoutMs: z.number().int().min(1000).max(30 * 24 * 3600_000).default(7 * 24 * 3600_000),
  /** Simulated work per unit (demos); 0 in tests. */
  stepDelayMs: z.number().int().min(0).max(60_000).default(0),
});
type Input = z.infer<typeof Input>;

type Grant = {
  id: string;
  system: string;
  principal: string;
  stale: boolean;
}

type Checkpoint = {
  systems: string[];
  fetched: number;
  grants: Grant[];
  proposed: string[];
  approved: string[] | null;
  revoked: Array<{ grant: string; receipt: Json }>;
}

const Approval = z.object({
  approved: z.boolean(),
  /** Grant ids the owners want to keep (excluded from revocation). */
  keep: z.array(z.string()).max(10_000).optional(),
});

const GRANTS_PER_SYSTEM = 3;

/** Grants per system, deterministic so a rerun sees the same data; exactly `revocations` of them are stale. */
function grantsFor(systemIndex: number, input: Input): Grant[] {
  const total = input.systems * GRANTS_PER_SYSTEM;
  const stride = Math.max(1, Math.floor(total / Math.max(1, input.revocations)));
  return Array.from({ length: GRANTS_PER_SYSTEM }, (_, g) => {
    const ordinal = systemIndex * GRANTS_PER_SYSTEM + g;
    return {
      id: `grant-${systemIndex + 1}-${g + 1}`,
      system: `system-${systemIndex + 1}`,
      principal: `user-${(ordinal * 7) % 97}`,
      stale: input.revocations > 0 && ordinal % stride === 0 && ordinal / stride < input.revocations,
    };
  });
}

async function pause(ctx: StepContext<Input, Checkpoint>): Promise<void> {
  if (ctx.input.stepDelayMs > 0) await ctx.clock.sleep(ctx.input.stepDelayMs, ctx.signal);
}

export function accessReviewType(downstream: Downstream) {
  return defineTaskType<Input, Checkpoint>({
    name: 'access-review',
    version: 1,
    description: 'Quarterly access review: fetch grants per system, propose revocations, ask the owners, revoke once each, report.',
    input: Input,
    initialCheckpoint: () => ({ systems: [], fetched: 0, grants: [], proposed: [], approved: null, revoked: [] }),
    onDeadline: 'fail',
    steps: [
      {
        name: 'plan',
        run: async (ctx) => {
          ctx.progress(0, ctx.input.systems, 'planning');
          await pause(ctx);
          return { ...ctx.checkpoint, systems: Array.from({ length: ctx.input.systems }, (_, i) => `system-${i + 1}`) };
        },
      },
      {
        name: 'fetch-grants',
        run: async (ctx) => {
          let cp = ctx.checkpoint;
          for (let i = cp.fetched; i < cp.systems.length; i++) {
            ctx.throwIfStopped();
            await pause(ctx);
            cp = { ...cp, fetched: i + 1, grants: [...cp.grants, ...grantsFor(i, ctx.input)] };
            ctx.progress(i + 1, cp.systems.length, `fetched grants of ${cp.systems[i]}`);
            // One commit per system: a crash here costs at most one system of repeated reads.
            if (i + 1 < cp.systems.length) await ctx.save(cp);
          }
          return cp;
        },
      },
      {
        name: 'analyse',
        run: async (ctx) => {
          await pause(ctx);
          const proposed = ctx.checkpoint.grants.filter((g) => g.stale).map((g) => g.id);
          ctx.progress(proposed.length, proposed.length, `${proposed.length} revocations proposed`);
          return { ...ctx.checkpoint, proposed };
        },
      },
      {
        name: 'ask-approval',
        run: async (ctx) => {
          const answer = ctx.ask('approval', {
            question: `Approve revoking ${ctx.checkpoint.proposed.length} stale grants?`,
            schema: Approval,
            timeoutMs: ctx.input.approvalTimeoutMs,
            context: { proposed: ctx.checkpoint.proposed },
          });
          const keep = new Set(answer.keep ?? []);
          const approved = answer.approved ? ctx.checkpoint.proposed.filter((g) => !keep.has(g)) : [];
          return { ...ctx.checkpoint, approved };
        },
      },
      {
        name: 'apply-revocations',
        run: async (ctx) => {
          let cp = ctx.checkpoint;
          const approved = cp.approved ?? [];
          const done = new Set(cp.revoked.map((r) => r.grant));
          for (const [i, grant] of approved.entries()) {
            if (done.has(grant)) continue;
            await pause(ctx);
            // The ledger key is the grant: a retry after 9 of 14 returns the 9 stored receipts and runs only 5.
            const receipt = await ctx.once(`revoke:${grant}`, (key, signal) => downstream.apply('revoke', key, { grant }, signal));
            cp = { ...cp, revoked: [...cp.revoked, { grant, receipt }] };
            ctx.progress(i + 1, approved.length, `revoked ${grant}`);
            if (i + 1 < approved.length) await ctx.save(cp);
          }
          return cp;
        },
      },
      {
        name: 'write-report',
        run: async (ctx) => {
          const cp = ctx.checkpoint;
          ctx.artifact('access-review-report', {
            systems_reviewed: cp.systems.length,
            grants_reviewed: cp.grants.length,
            revocations_proposed: cp.proposed.length,
            revocations_applied: cp.revoked.length,
            revoked: cp.revoked.map((r) => r.grant),
          });
          ctx.progress(1, 1, 'report written');
          return cp;
        },
      },
    ],
    result: (cp) => ({ systems_reviewed: cp.systems.length, revocations_applied: cp.revoked.length }),
  });
}
