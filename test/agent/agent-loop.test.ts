/**
 * The durable agent loop in one process, on both stores, with an injected clock and the AI SDK's mock language
 * model: commits per turn and per tool call, progress with turns and tokens, turn and token budgets, tool errors,
 * retries that never ask the model again, questions, cancellation that aborts the in-flight model call, and the
 * example agent.
 */
import { APICallError, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTool, AgentToolError, defineAgentTaskType, type AgentCheckpoint, type AgentTaskTypeDefinition } from '../../src/agent/index.js';
import type { Json, Task } from '../../src/core/task.js';
import { exampleRegistry, InMemoryDownstream } from '../../src/examples/index.js';
import { TaskTypeRegistry } from '../../src/runtime/task-type.js';
import { Worker } from '../../src/runtime/worker.js';
import { TaskService } from '../../src/service/task-service.js';
import type { Store } from '../../src/store/port.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { eventually, Gate } from '../helpers/gate.js';
import { expectCleanHistory } from '../helpers/history.js';
import { storesUnderTest } from '../helpers/stores.js';
import { testStores } from '../helpers/test-stores.js';

const who = { tenant: 'acme', principal: 'alice' };
const LEASE_MS = 10_000;

type CallOptions = MockLanguageModelV3['doGenerateCalls'][number];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type Content = GenerateResult['content'][number];

/** The turn a request is for: one more than the assistant messages already in its prompt. */
function turnOf(call: CallOptions): number {
  return call.prompt.filter((m) => m.role === 'assistant').length + 1;
}

function toolCall(id: string, toolName: string, input: Json): Content {
  return { type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) };
}

function reply(content: Content[], inputTokens = 10, outputTokens = 5): GenerateResult {
  const calls = content.some((c) => c.type === 'tool-call');
  return {
    content,
    finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
    },
    warnings: [],
  };
}

/** Tool results in a request's prompt: `toolName -> outputs` (json values or error texts). */
function toolResults(call: CallOptions): Array<{ toolName: string; type: string; value: unknown }> {
  return call.prompt.flatMap((m) =>
    m.role === 'tool' ? m.content.flatMap((p) => (p.type === 'tool-result' ? [{ toolName: p.toolName, type: p.output.type, value: (p.output as { value?: unknown }).value }] : [])) : [],
  );
}

/** A mock model whose answer for each turn is given by `script(turn, call)`. */
function scriptedMock(script: (turn: number, call: CallOptions) => GenerateResult | Promise<GenerateResult>) {
  return new MockLanguageModelV3({ doGenerate: async (call) => script(turnOf(call), call) });
}

for (const kind of storesUnderTest()) {
  describe(`agent loop on ${kind}`, () => {
    const stores = testStores(kind);
    let store: Store;
    let clock: FakeClock;
    let downstream: InMemoryDownstream;
    let service: TaskService;
    let registry: TaskTypeRegistry;

    const chargeTool = () =>
      agentTool({
        description: 'Charge an amount. Irreversible.',
        inputSchema: z.object({ amount: z.number().int().positive() }),
        execute: ({ amount }, tc) => downstream.apply('charge', tc.idempotencyKey, { amount }),
      });

    function useAgent(def: Omit<AgentTaskTypeDefinition<Record<string, never>>, 'name' | 'version' | 'input' | 'prompt'> & { prompt?: AgentTaskTypeDefinition<unknown>['prompt'] }) {
      const type = defineAgentTaskType<Record<string, never>>({ name: 'test-agent', version: 1, input: z.object({}).strict(), prompt: () => 'Go.', ...def });
      registry = new TaskTypeRegistry([type]);
      service = new TaskService({ store, registry, clock });
      return new Worker({ store, registry, clock, leaseMs: LEASE_MS, pollMs: 1000, random: () => 0.5 });
    }

    async function get(id: string): Promise<Task> {
      return service.getTask(who, id);
    }

    beforeEach(async () => {
      store = await stores.open();
      clock = new FakeClock();
      downstream = new InMemoryDownstream();
    });
    afterEach(async () => {
      await store.close();
    });
    afterAll(() => stores.teardown());

    it('commits each model turn before its tool calls and each tool call after it; progress carries turns and tokens', async () => {
      const model = scriptedMock((turn, call) => {
        if (turn === 1) return reply([{ type: 'text', text: 'Looking up, then charging.' }, toolCall('a', 'lookup', { id: 7 }), toolCall('b', 'charge', { amount: 5 })], 10, 5);
        if (turn === 2) {
          // The model sees both results of turn 1.
          expect(toolResults(call)).toEqual([
            { toolName: 'lookup', type: 'json', value: { id: 7, owner: 'user-7' } },
            { toolName: 'charge', type: 'json', value: expect.objectContaining({ kind: 'charge' }) },
          ]);
          return reply([toolCall('c', 'charge', { amount: 6 })], 20, 5);
        }
        return reply([{ type: 'text', text: 'All charged.' }], 30, 5);
      });
      let lookups = 0;
      const worker = useAgent({
        model,
        system: 'You charge customers.',
        tools: {
          lookup: agentTool({
            inputSchema: z.object({ id: z.number() }),
            runOnce: false,
            execute: ({ id }) => {
              lookups += 1;
              return { id, owner: `user-${id}` };
            },
          }),
          charge: chargeTool(),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      const done = await get(task.id);
      expect(done.state).toBe('completed');
      expect(done.result).toEqual({ text: 'All charged.', finish_reason: 'stop', turns: 3, usage: { input_tokens: 60, output_tokens: 15, total_tokens: 75 } });
      expect(model.doGenerateCalls).toHaveLength(3);
      expect(model.doGenerateCalls.map((c) => c.providerOptions?.belay)).toEqual([1, 2, 3].map((turn) => ({ taskId: task.id, turn, attempt: 1 })));
      expect(model.doGenerateCalls[0]!.prompt[0]).toEqual({ role: 'system', content: 'You charge customers.' });
      expect(lookups).toBe(1);
      // Effects: the charges went through the ledger under the call's key, which was the downstream's idempotency key.
      const ledger = await store.listEffects(task.id);
      expect(ledger.map((e) => [e.key, e.status])).toEqual([
        ['charge:turn-1/call-1', 'applied'],
        ['charge:turn-2/call-0', 'applied'],
      ]);
      expect([...downstream.applied.keys()]).toEqual([`${task.id}:charge:turn-1/call-1`, `${task.id}:charge:turn-2/call-0`]);
      // One commit per model turn (before its tools) and one per tool call, then the completion.
      const events = await store.listEvents(task.id, 0, 1000);
      const progress = events.filter((e) => e.kind === 'progress' || e.kind === 'completed').map((e) => e.body.progress as { current: number; message: string });
      expect(progress.map((p) => p.current)).toEqual([1, 1, 1, 2, 2, 3]);
      expect(progress.map((p) => /: (.*?);/.exec(p.message)![1])).toEqual([
        '2 tool call(s) requested',
        'lookup done (1 of 2 tool calls)',
        'charge done (2 of 2 tool calls)',
        '1 tool call(s) requested',
        'charge done (1 of 1 tool calls)',
        'final answer (stop)',
      ]);
      expect(progress.map((p) => Number(/; (\d+) tokens/.exec(p.message)![1]))).toEqual([15, 15, 15, 40, 40, 75]);
      const cp = done.checkpoint as unknown as AgentCheckpoint;
      expect(cp.usage).toEqual({ inputTokens: 60, outputTokens: 15, totalTokens: 75 });
      // The conversation: user, assistant (2 calls), tool (2 results), assistant, tool, assistant.
      expect(cp.messages.map((m: ModelMessage) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
      await expectCleanHistory(store, task.id);
    });

    it('a large run-once result stays in the ledger by reference; the model still gets all of it on every later turn', async () => {
      const document = 'lorem ipsum '.repeat(5000);
      const seen: number[] = [];
      const model = scriptedMock((turn, call) => {
        const results = toolResults(call);
        if (turn > 1) seen.push((results.find((r) => r.toolName === 'fetch_document')!.value as string).length);
        if (turn === 1) return reply([toolCall('a', 'fetch_document', { id: 'doc-1' })]);
        if (turn === 2) return reply([toolCall('b', 'charge', { amount: 1 })]);
        return reply([{ type: 'text', text: 'summarised' }]);
      });
      const worker = useAgent({
        model,
        tools: {
          charge: chargeTool(),
          fetch_document: agentTool({ inputSchema: z.object({ id: z.string() }), execute: () => document }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      const done = await get(task.id);
      expect(done.state).toBe('completed');
      expect(seen).toEqual([document.length, document.length]);
      const cp = done.checkpoint as unknown as AgentCheckpoint;
      expect(cp.refs).toEqual({ a: 'fetch_document:turn-1/call-0' });
      expect(JSON.stringify(cp).length).toBeLessThan(8_000);
      const ledger = await store.listEffects(task.id);
      expect(ledger.find((e) => e.key === 'fetch_document:turn-1/call-0')!.result).toEqual({ type: 'text', value: document });
    });

    it('the turn budget ends the task with AGENT_TURN_BUDGET_EXCEEDED and runs no tool call the model could not see', async () => {
      const model = scriptedMock((turn) => reply([toolCall(`t${turn}`, 'charge', { amount: turn })]));
      const worker = useAgent({ model, tools: { charge: chargeTool() }, maxTurns: 2 });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      const failed = await get(task.id);
      expect(failed).toMatchObject({
        state: 'failed',
        error: {
          code: 'AGENT_TURN_BUDGET_EXCEEDED',
          retryable: false,
          details: { turns: 2, max_turns: 2, usage: { total_tokens: 30 }, effects_applied: ['charge:turn-1/call-0'], effects_not_started: ['charge:turn-2/call-0'] },
        },
      });
      expect(model.doGenerateCalls).toHaveLength(2);
      expect(downstream.countByKind('charge')).toBe(1);
      // Turn 2 is kept in the checkpoint, its call never ran.
      const cp = failed.checkpoint as unknown as AgentCheckpoint;
      expect(cp.turn).toBe(2);
      expect(cp.calls).toEqual([expect.objectContaining({ toolName: 'charge', key: 'charge:turn-2/call-0' })]);
      expect(cp.calls[0]!.output).toBeUndefined();
      await expectCleanHistory(store, task.id);
    });

    it('the token budget ends the task with AGENT_TOKEN_BUDGET_EXCEEDED before any more tokens or effects are spent', async () => {
      const model = scriptedMock((turn) => reply([toolCall(`t${turn}`, 'charge', { amount: turn })], 10, 5));
      const worker = useAgent({ model, tools: { charge: chargeTool() }, maxTotalTokens: 25 });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      expect(await get(task.id)).toMatchObject({
        state: 'failed',
        error: { code: 'AGENT_TOKEN_BUDGET_EXCEEDED', details: { turns: 2, max_total_tokens: 25, usage: { input_tokens: 20, output_tokens: 10, total_tokens: 30 } } },
        progress: { current: 2 },
      });
      expect(model.doGenerateCalls).toHaveLength(2);
      expect(downstream.countByKind('charge')).toBe(1);

      // A final answer that crosses the budget is kept: the tokens were spent either way.
      const answers = scriptedMock((turn) => (turn === 1 ? reply([toolCall('x', 'charge', { amount: 1 })], 10, 5) : reply([{ type: 'text', text: 'Done.' }], 10, 5)));
      const second = useAgent({ model: answers, tools: { charge: chargeTool() }, maxTotalTokens: 25 });
      const { task: t2 } = await service.createTask(who, { type: 'test-agent', input: {} });
      await second.drain();
      expect(await get(t2.id)).toMatchObject({ state: 'completed', result: { text: 'Done.', usage: { total_tokens: 30 } } });
    });

    it('invalid tool input, unknown tools and AgentToolError go back to the model as error results', async () => {
      let executed = 0;
      const model = scriptedMock((turn, call) => {
        if (turn === 1) return reply([toolCall('bad', 'charge', { amount: 'ten' }), toolCall('ghost', 'teleport', {}), toolCall('refused', 'refund', { amount: 3 })]);
        const results = toolResults(call);
        expect(results.map((r) => [r.toolName, r.type])).toEqual([
          ['charge', 'error-text'],
          ['teleport', 'error-text'],
          ['refund', 'error-text'],
        ]);
        expect(results[2]!.value).toBe('Refunds need a ticket');
        return reply([{ type: 'text', text: 'Could not do it.' }]);
      });
      const worker = useAgent({
        model,
        tools: {
          charge: chargeTool(),
          refund: agentTool({
            inputSchema: z.object({ amount: z.number() }),
            execute: () => {
              executed += 1;
              throw new AgentToolError('Refunds need a ticket');
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'completed', result: { text: 'Could not do it.' } });
      expect(downstream.calls).toBe(0);
      expect(executed).toBe(1);
      // The refused call is recorded once (its result is the error), nothing else reached the ledger.
      expect((await store.listEffects(task.id)).map((e) => [e.key, e.status])).toEqual([['refund:turn-1/call-2', 'applied']]);
    });

    it('a failing tool is retried from the last commit: the model is not asked again and recorded effects are not repeated', async () => {
      let attempts = 0;
      const model = scriptedMock((turn) =>
        turn === 1 ? reply([toolCall('a', 'charge', { amount: 1 }), toolCall('b', 'notify', { text: 'hi' })]) : reply([{ type: 'text', text: 'ok' }]),
      );
      const worker = useAgent({
        model,
        retry: { initialDelayMs: 1000, factor: 2, maxDelayMs: 60_000 },
        tools: {
          charge: chargeTool(),
          notify: agentTool({
            inputSchema: z.object({ text: z.string() }),
            execute: async ({ text }, tc) => {
              attempts += 1;
              if (attempts <= 2) throw new Error('notification service answered 503');
              return downstream.apply('notify', tc.idempotencyKey, { text });
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      let t = await get(task.id);
      expect(t).toMatchObject({ state: 'working', error: { code: 'STEP_FAILED', retryable: true, message: 'notification service answered 503' } });
      // First failure since progress: backoff in [500, 1000] ms.
      expect(t.wakeAt! - clock.now()).toBeGreaterThanOrEqual(500);
      expect(t.wakeAt! - clock.now()).toBeLessThanOrEqual(1000);
      clock.advance(1000);
      await worker.drain();
      t = await get(task.id);
      // Second failure without progress: backoff in [1000, 2000] ms.
      expect(t.wakeAt! - clock.now()).toBeGreaterThanOrEqual(1000);
      expect(t.wakeAt! - clock.now()).toBeLessThanOrEqual(2000);
      clock.advance(2000);
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'completed', result: { text: 'ok' } });
      expect(attempts).toBe(3);
      expect(model.doGenerateCalls).toHaveLength(2);
      expect(downstream.countByKind('charge')).toBe(1);
      expect([...downstream.applied.values()].every((a) => a.calls === 1)).toBe(true);
      // The retried call kept its idempotency key.
      expect(downstream.applied.get(`${task.id}:notify:turn-1/call-1`)).toBeDefined();
    });

    it('a run-once call whose outcome is unknown is reconciled with the downstream rather than sent again', async () => {
      let executions = 0;
      const model = scriptedMock((turn, call) => {
        if (turn === 1) return reply([toolCall('a', 'transfer', { amount: 9 })]);
        expect(toolResults(call)).toEqual([{ toolName: 'transfer', type: 'json', value: { transfer_id: 'tr-found' } }]);
        return reply([{ type: 'text', text: 'transferred' }]);
      });
      const worker = useAgent({
        model,
        tools: {
          transfer: agentTool({
            inputSchema: z.object({ amount: z.number() }),
            execute: async () => {
              executions += 1;
              // The request went out and the connection dropped before the answer: the outcome is unknown.
              throw new Error('socket hang up');
            },
            reconcile: async ({ effectKey }, key) => {
              expect(effectKey).toBe('transfer:turn-1/call-0');
              expect(key).toBe(`${task.id}:transfer:turn-1/call-0`);
              return { applied: true, result: { transfer_id: 'tr-found' } };
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      expect((await get(task.id)).state).toBe('working');
      clock.advance(60_000);
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'completed', result: { text: 'transferred' } });
      expect(executions).toBe(1);
      expect(model.doGenerateCalls).toHaveLength(2);
    });

    it('failures without progress are bounded: ATTEMPTS_EXHAUSTED after retry.maxAttempts', async () => {
      const model = scriptedMock(() => reply([toolCall('a', 'broken', {})]));
      const worker = useAgent({
        model,
        retry: { maxAttempts: 3, initialDelayMs: 1000, factor: 1, maxDelayMs: 1000 },
        tools: {
          broken: agentTool({
            inputSchema: z.object({}),
            execute: () => {
              throw new Error('always down');
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      for (let i = 0; i < 5; i++) {
        await worker.drain();
        clock.advance(1000);
      }
      expect(await get(task.id)).toMatchObject({
        state: 'failed',
        error: { code: 'ATTEMPTS_EXHAUSTED', details: { last_error: { code: 'STEP_FAILED', message: 'always down' } } },
      });
      expect(model.doGenerateCalls).toHaveLength(1);
    });

    it('a tool asks a person; twelve questions in a row neither lose an answer nor exhaust the attempts', async () => {
      const model = scriptedMock((turn, call) => {
        const answers = toolResults(call).map((r) => r.value as { ok: boolean; note: string });
        expect(answers.map((a) => a.note)).toEqual(Array.from({ length: turn - 1 }, (_, i) => `answer ${i + 1}`));
        return turn <= 12 ? reply([toolCall(`q${turn}`, 'confirm', { step: turn })]) : reply([{ type: 'text', text: 'confirmed twelve times' }]);
      });
      const worker = useAgent({
        model,
        maxTurns: 13,
        tools: {
          confirm: agentTool({
            inputSchema: z.object({ step: z.number() }),
            runOnce: false,
            execute: ({ step }, tc) => tc.ask({ question: `Confirm step ${step}?`, schema: z.object({ ok: z.boolean(), note: z.string() }) }),
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      for (let i = 1; i <= 12; i++) {
        await worker.drain();
        const paused = await get(task.id);
        expect(paused).toMatchObject({ state: 'input_required', pendingInput: { key: `turn-${i}-call-0`, question: `Confirm step ${i}?` } });
        await service.answer(who, task.id, { version: paused.version, answer: { ok: true, note: `answer ${i}` } });
      }
      await worker.drain();
      const done = await get(task.id);
      expect(done).toMatchObject({ state: 'completed', result: { text: 'confirmed twelve times', turns: 13 } });
      // (Every resume is a claim, so the runner's per-step attempt count passed the default 10 long ago.)
      expect(model.doGenerateCalls).toHaveLength(13);
      const kinds = await expectCleanHistory(store, task.id);
      expect(kinds.filter((k) => k === 'input_required')).toHaveLength(12);
      expect(kinds.filter((k) => k === 'input_received')).toHaveLength(12);
    });

    it('a tool asks first and then acts through tc.once: the effect runs once, after the answer, under its own key', async () => {
      const model = scriptedMock((turn) => (turn === 1 ? reply([toolCall('a', 'approve_and_pay', { amount: 40 })]) : reply([{ type: 'text', text: 'paid' }])));
      let runs = 0;
      const worker = useAgent({
        model,
        tools: {
          approve_and_pay: agentTool({
            inputSchema: z.object({ amount: z.number() }),
            runOnce: false,
            execute: async ({ amount }, tc) => {
              runs += 1;
              const { ok } = tc.ask({ question: `Pay ${amount}?`, schema: z.object({ ok: z.boolean() }) });
              if (!ok) return { paid: false };
              return tc.once('pay', (key) => downstream.apply('pay', key, { amount }));
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      const paused = await get(task.id);
      expect(paused.pendingInput).toMatchObject({ key: 'turn-1-call-0', question: 'Pay 40?' });
      expect(downstream.calls).toBe(0);
      await service.answer(who, task.id, { version: paused.version, answer: { ok: true } });
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'completed', result: { text: 'paid' } });
      expect(runs).toBe(2);
      expect([...downstream.applied.keys()]).toEqual([`${task.id}:pay:turn-1/call-0/approve_and_pay`]);
      expect((await store.listEffects(task.id)).map((e) => e.key)).toEqual(['pay:turn-1/call-0/approve_and_pay']);
      expect(model.doGenerateCalls).toHaveLength(2);
    });

    it('a tool that asks inside a run-once call fails with AGENT_TOOL_MISCONFIGURED', async () => {
      const model = scriptedMock(() => reply([toolCall('a', 'approve_and_pay', {})]));
      const worker = useAgent({
        model,
        tools: {
          approve_and_pay: agentTool({ inputSchema: z.object({}), execute: (_i, tc) => tc.ask({ question: 'Pay?', schema: z.boolean() }) }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'failed', error: { code: 'AGENT_TOOL_MISCONFIGURED' } });
    });

    it('a model error the SDK calls non-retryable fails the task with AGENT_MODEL_ERROR', async () => {
      const model = new MockLanguageModelV3({
        doGenerate: async () => {
          throw new APICallError({ message: 'context too long', url: 'https://model.invalid/v1', requestBodyValues: {}, statusCode: 400, isRetryable: false });
        },
      });
      const worker = useAgent({ model, tools: { charge: chargeTool() } });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      await worker.drain();
      expect(await get(task.id)).toMatchObject({ state: 'failed', error: { code: 'AGENT_MODEL_ERROR', details: { status: 400, turn: 1 } } });
      expect(model.doGenerateCalls).toHaveLength(1);
    });

    it('cancelling mid-turn aborts the in-flight model call and reports the tool effects that had happened', async () => {
      const inFlight = new Gate();
      let abortedWith: unknown = null;
      const model = scriptedMock(async (turn, call) => {
        if (turn === 1) return reply([toolCall('a', 'charge', { amount: 1 }), toolCall('b', 'charge', { amount: 2 })]);
        // Turn 2 "thinks" until its signal fires.
        void inFlight.wait();
        return new Promise<GenerateResult>((_resolve, reject) => {
          call.abortSignal!.addEventListener('abort', () => {
            abortedWith = call.abortSignal!.reason;
            reject(call.abortSignal!.reason as Error);
          });
        });
      });
      const worker = useAgent({
        model,
        tools: {
          charge: agentTool({
            ...chargeTool(),
            // Declared undo: runs once per applied charge after the cancellation, newest first.
            compensate: async ({ effectKey, result }, key) => downstream.apply('refund', key, { effectKey, receipt: result }),
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      worker.start();
      clock.advance(0);
      try {
        await inFlight.arrived;
        const { outcome } = await service.cancel(who, task.id, 'user changed their mind');
        expect(outcome).toBe('requested');
        // The worker hears the cancellation request (store notification) and aborts the step's signal.
        const canceled = await eventually(async () => {
          const t = await get(task.id);
          return t.state === 'canceled' ? t : null;
        });
        expect(abortedWith).toMatchObject({ name: 'StopSignal', reason: 'cancel_requested' });
        expect(model.doGenerateCalls).toHaveLength(2);
        expect(model.doGenerateCalls[1]!.abortSignal!.aborted).toBe(true);
        expect(canceled.error).toMatchObject({
          code: 'CANCELLED',
          details: {
            effects_applied: ['charge:turn-1/call-0', 'charge:turn-1/call-1'],
            effects_uncertain: [],
            effects_not_started: [],
            compensations: [
              { effect: 'charge:turn-1/call-1', status: 'compensated' },
              { effect: 'charge:turn-1/call-0', status: 'compensated' },
            ],
          },
        });
        expect(downstream.countByKind('charge')).toBe(2);
        expect([...downstream.applied.values()].filter((a) => a.kind === 'refund').map((a) => [a.key, (a.payload as { receipt: Json }).receipt])).toEqual([
          [`${task.id}:compensate:charge:turn-1/call-1`, downstream.applied.get(`${task.id}:charge:turn-1/call-1`)!.receipt],
          [`${task.id}:compensate:charge:turn-1/call-0`, downstream.applied.get(`${task.id}:charge:turn-1/call-0`)!.receipt],
        ]);
        // The last commit is kept: turn 1 and both of its results; turn 2 never committed.
        const cp = canceled.checkpoint as unknown as AgentCheckpoint;
        expect(cp.turn).toBe(1);
        expect(cp.calls.map((c) => c.output?.type)).toEqual(['json', 'json']);
        await expectCleanHistory(store, task.id);
      } finally {
        await worker.stop(1000);
      }
    });

    it('cancelling while a run-once tool waits on its downstream reports it as uncertain and the calls after it as never started', async () => {
      const sent = new Gate();
      const model = scriptedMock(() =>
        reply([toolCall('a', 'charge', { amount: 1 }), toolCall('b', 'slow_charge', { amount: 2 }), toolCall('c', 'charge', { amount: 3 }), toolCall('d', 'look', {})]),
      );
      const worker = useAgent({
        model,
        tools: {
          charge: chargeTool(),
          look: agentTool({ inputSchema: z.object({}), runOnce: false, execute: () => 'nothing to see' }),
          slow_charge: agentTool({
            inputSchema: z.object({ amount: z.number() }),
            execute: (_input, tc) => {
              void sent.wait();
              return new Promise<Json>((_resolve, reject) => tc.signal.addEventListener('abort', () => reject(tc.signal.reason as Error)));
            },
          }),
        },
      });
      const { task } = await service.createTask(who, { type: 'test-agent', input: {} });
      worker.start();
      clock.advance(0);
      try {
        await sent.arrived;
        await service.cancel(who, task.id);
        const canceled = await eventually(async () => {
          const t = await get(task.id);
          return t.state === 'canceled' ? t : null;
        });
        expect(canceled.error!.details).toMatchObject({
          effects_applied: ['charge:turn-1/call-0'],
          effects_uncertain: ['slow_charge:turn-1/call-1'],
          // Planned by the committed turn, never started (a read-only call is no effect).
          effects_not_started: ['charge:turn-1/call-2'],
        });
        expect(downstream.countByKind('charge')).toBe(1);
      } finally {
        await worker.stop(1000);
      }
    });

    it('the example agent (scripted model) runs from an empty input: asks the owners, revokes each approved grant once, reports', async () => {
      registry = exampleRegistry(downstream);
      service = new TaskService({ store, registry, clock });
      const worker = new Worker({ store, registry, clock, leaseMs: LEASE_MS });
      const { task } = await service.createTask(who, { type: 'agent-access-review', input: {} });
      await worker.drain();
      const paused = await get(task.id);
      expect(paused).toMatchObject({ state: 'input_required', pendingInput: { key: 'turn-4-call-0', question: 'Approve revoking 4 stale grants?' } });
      const proposed = (paused.pendingInput!.context as { grants: string[] }).grants;
      expect(proposed).toHaveLength(4);
      expect(downstream.countByKind('revoke')).toBe(0);
      await service.answer(who, task.id, { version: paused.version, answer: { approved: true, keep: [proposed[0]] } });
      await worker.drain();
      const done = await get(task.id);
      expect(done).toMatchObject({ state: 'completed', result: { summary: 'Reviewed 6 systems: revoked 3 stale grants, kept 1.', turns: 7 } });
      const revoked = [...downstream.applied.values()].filter((a) => a.kind === 'revoke').map((a) => (a.payload as { grant: string }).grant);
      expect(revoked).toEqual(proposed.slice(1));
      expect(downstream.countByKind('model-call')).toBe(7);
      expect([...downstream.applied.values()].every((a) => a.calls === 1)).toBe(true);
      expect(done.artifacts[0]).toMatchObject({ name: 'access-review-report', data: { revoked: proposed.slice(1), kept: [proposed[0]] } });
      await expectCleanHistory(store, task.id);
    });
  });
}
