/**
 * @module examples/synthetic
 * A task type for tests, benchmarks and operators checking a deployment. Each of `steps` units is one commit;
 * each effect is a `once()`; with `effectUrl` every effect POSTs `{taskId, step, n}` there with its ledger key in an
 * `Idempotency-Key` header, so an observer outside Belay can count what was applied.
 */
import { z } from 'zod';
import { RetryableError } from '../core/errors.js';
import type { Json } from '../core/task.js';
import { defineTaskType } from '../runtime/task-type.js';

const Input = z.object({
  steps: z.number().int().min(1).max(10_000).default(3),
  stepMs: z.number().int().min(0).max(600_000).default(0),
  effectsPerStep: z.number().int().min(0).max(1000).default(1),
  effectUrl: z.url({ protocol: /^https?$/ }).optional(),
  askAtStep: z.number().int().min(0).optional(),
  failRate: z.number().min(0).max(1).default(0),
});
type Input = z.infer<typeof Input>;

type Checkpoint = {
  done: number;
}

async function postEffect(url: string, key: string, body: Json, signal: AbortSignal): Promise<Json> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(body), signal });
  } catch (e) {
    throw RetryableError.from(e, { code: 'EFFECT_POST_FAILED', retryAfterMs: 100 });
  }
  if (!res.ok) throw new RetryableError(`effectUrl answered ${res.status}`, { code: 'EFFECT_POST_FAILED', retryAfterMs: 100 });
  return (await res.json()) as Json;
}

export const syntheticType = defineTaskType<Input, Checkpoint>({
  name: 'synthetic',
  version: 1,
  description: 'Configurable steps, effects, pauses and failures, for tests, benchmarks and deployment checks.',
  input: Input,
  initialCheckpoint: () => ({ done: 0 }),
  retry: { maxAttempts: 1000, initialDelayMs: 50, maxDelayMs: 2000 },
  steps: [
    {
      name: 'run',
      run: async (ctx) => {
        let cp = ctx.checkpoint;
        const { steps, stepMs, effectsPerStep, effectUrl, askAtStep, failRate } = ctx.input;
        while (cp.done < steps) {
          const step = cp.done;
          if (askAtStep === step) {
            ctx.ask(`step-${step}`, { question: `Continue past step ${step}?`, schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } });
          }
          if (stepMs > 0) await ctx.clock.sleep(stepMs, ctx.signal);
          if (failRate > 0 && Math.random() < failRate) throw new RetryableError(`injected failure at step ${step}`, { retryAfterMs: 10 });
          for (let n = 0; n < effectsPerStep; n++) {
            await ctx.once(`s${step}-e${n}`, (key, signal) =>
              effectUrl ? postEffect(effectUrl, key, { taskId: ctx.taskId, step, n }, signal) : Promise.resolve({ step, n }),
            );
          }
          cp = { done: step + 1 };
          ctx.progress(cp.done, steps, null);
          if (cp.done < steps) await ctx.save(cp);
        }
        return cp;
      },
    },
  ],
  result: (cp) => ({ steps_done: cp.done }),
});
