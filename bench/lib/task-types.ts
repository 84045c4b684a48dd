/**
 * The task types the benchmark runs. Each is the smallest honest version of its shape: the steps do no work, so
 * what is measured is Belay's own cost (claims, fenced commits, events, wake-ups).
 */
import { z } from 'zod';
import type { Json } from '../../src/core/task.js';
import { defineTaskType, TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { yieldToLoop } from './stats.js';

/** Flipped by a scenario to make `bench-commits` loops return (and their tasks complete). */
export const commitLoops = { stop: false };

/** One step that commits a sub-step (`ctx.save`) per iteration until told to stop: the step-commit figure. */
export const commitsType = defineTaskType<{ max: number }, { done: number }>({
  name: 'bench-commits',
  version: 1,
  input: z.object({ max: z.number().int().min(1) }),
  initialCheckpoint: () => ({ done: 0 }),
  steps: [
    {
      name: 'loop',
      run: async (ctx) => {
        let cp = ctx.checkpoint;
        while (!commitLoops.stop && cp.done < ctx.input.max) {
          cp = { done: cp.done + 1 };
          ctx.progress(cp.done, ctx.input.max, null);
          await ctx.save(cp);
          // A real step does I/O between commits; with SQLite's synchronous driver this keeps timers running.
          await yieldToLoop();
        }
        return cp;
      },
    },
  ],
});

const nextStep = async (ctx: { checkpoint: { n: number } }) => ({ n: ctx.checkpoint.n + 1 });

/** Five empty steps: create, claim, four progress commits and the completing commit. */
export const fiveStepType = defineTaskType<Record<string, never>, { n: number }>({
  name: 'bench-five',
  version: 1,
  input: z.strictObject({}),
  initialCheckpoint: () => ({ n: 0 }),
  steps: ['one', 'two', 'three', 'four', 'five'].map((name) => ({ name, run: nextStep })),
});

/** Called when a `bench-noop` step starts (create → start latency). */
export const noopHooks: { onStart: ((taskId: string, at: number) => void) | null } = { onStart: null };

/** One empty step: the no-op job of the peer comparison. */
export const noopType = defineTaskType<Record<string, never>, null>({
  name: 'bench-noop',
  version: 1,
  input: z.strictObject({}),
  initialCheckpoint: () => null,
  steps: [
    {
      name: 'noop',
      run: async (ctx) => {
        noopHooks.onStart?.(ctx.taskId, performance.now());
        return null;
      },
    },
  ],
});

/** Asks one question and waits (the cost of waiting). */
export const waitType = defineTaskType<Record<string, never>, null>({
  name: 'bench-wait',
  version: 1,
  input: z.strictObject({}),
  initialCheckpoint: () => null,
  steps: [
    {
      name: 'approve',
      run: async (ctx) => {
        ctx.ask('approval', {
          question: 'Approve the change the agent proposes?',
          schema: { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] },
        });
        return null;
      },
    },
  ],
});

/** Never run by a worker: claimed directly with `store.claimTasks` to time claims. */
export const claimProbeType = defineTaskType<Record<string, never>, Json>({
  name: 'bench-claim',
  version: 1,
  input: z.strictObject({}),
  initialCheckpoint: () => null,
  steps: [{ name: 'never', run: async () => null }],
});

export const serviceRegistry = () => new TaskTypeRegistry([commitsType, fiveStepType, noopType, waitType, claimProbeType]);
export const who = { tenant: 'bench', principal: 'bench' };
