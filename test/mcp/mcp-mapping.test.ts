/** The MCP front's pure mappings: status vocabulary, the error table, ttl, question rendering and ids. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BelayError, ERROR_CATALOGUE, type BelayErrorCode } from '../../src/core/errors.js';
import type { Task } from '../../src/core/task.js';
import { TASK_STATES } from '../../src/core/task-state.js';
import { MCP_ERRORS, rpcErrorFor } from '../../src/protocols/mcp/mcp-errors.js';
import { answerFromContent, inputKey, inputRequestId, parseInputKey, parseInputRequestId, projectSchema } from '../../src/protocols/mcp/input-request.js';
import { DEFAULT_TTL_POLICY, clampTtl, contextIdForTtl, grantedTtl, reportedTtl, ttlElapsed } from '../../src/protocols/mcp/task-ttl.js';
import { detailedTask, legacyTask, statusOf } from '../../src/protocols/mcp/task-view.js';

function task(over: Partial<Task> = {}): Task {
  return {
    id: 'task_1',
    tenant: 'acme',
    contextId: contextIdForTtl(60_000),
    type: 'synthetic',
    typeVersion: 1,
    state: 'working',
    step: 0,
    checkpoint: null,
    input: {},
    progress: { current: 2, total: 5, message: 'copying' },
    pendingInput: null,
    answers: {},
    cancelRequestedAt: null,
    result: null,
    artifacts: [],
    error: null,
    leaseOwner: null,
    leaseUntil: null,
    fence: 1,
    version: 3,
    nextSeq: 4,
    attempts: 1,
    wakeAt: null,
    createdAt: 1_000_000,
    updatedAt: 1_000_500,
    terminalAt: null,
    expiresAt: null,
    createdBy: 'alice',
    callbackUrl: null,
    ...over,
  };
}

describe('MCP mappings', () => {
  it('maps every canonical state to the MCP vocabulary (DESIGN.md §4), a committed cancellation to cancelled', () => {
    const expected: Record<string, string> = {
      submitted: 'working',
      working: 'working',
      input_required: 'input_required',
      auth_required: 'input_required',
      completed: 'completed',
      failed: 'failed',
      canceled: 'cancelled',
      rejected: 'failed',
    };
    for (const state of TASK_STATES) expect(statusOf(task({ state }))).toBe(expected[state]);
    expect(statusOf(task({ state: 'working', cancelRequestedAt: 5 }))).toBe('cancelled');
    expect(statusOf(task({ state: 'completed', cancelRequestedAt: 5 }))).toBe('completed');
  });

  it('has one JSON-RPC code for every catalogue code; not-found and internal errors carry no details', () => {
    expect(Object.keys(MCP_ERRORS).sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
    for (const code of Object.keys(ERROR_CATALOGUE) as BelayErrorCode[]) expect(Number.isInteger(MCP_ERRORS[code].rpc)).toBe(true);
    expect(rpcErrorFor(new BelayError('NOT_FOUND', 'No such task', { details: { id: 'x' } }))).toEqual({
      code: -32602,
      message: 'Failed to retrieve task: Task not found',
      data: { code: 'not_found', owner: 'caller', retryable: false },
    });
    expect(rpcErrorFor(new Error('SELECT * FROM secrets'))).toEqual({ code: -32603, message: 'Internal error', data: { code: 'internal', owner: 'operator', retryable: true } });
    expect(rpcErrorFor(new BelayError('TASK_EXPIRED', 'gone', { details: { final_state: 'completed' } }))).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task has expired', data: { final_state: 'completed' } });
  });

  it('clamps the ttl, records it in the context id, and expires only finished tasks', () => {
    expect(clampTtl(undefined, DEFAULT_TTL_POLICY)).toBe(DEFAULT_TTL_POLICY.defaultMs);
    expect(clampTtl(null, DEFAULT_TTL_POLICY)).toBe(DEFAULT_TTL_POLICY.defaultMs);
    expect(clampTtl(5, DEFAULT_TTL_POLICY)).toBe(60_000);
    expect(clampTtl(1e15, DEFAULT_TTL_POLICY)).toBe(30 * 24 * 3600_000);
    const t = task({ contextId: contextIdForTtl(90_000) });
    expect(grantedTtl(t)).toBe(90_000);
    expect(ttlElapsed(t, t.createdAt + 100_000)).toBe(false);
    expect(ttlElapsed({ ...t, state: 'completed' }, t.createdAt + 100_000)).toBe(true);
    const rest = task({ contextId: 'ctx_abc', expiresAt: 3_000_000 });
    expect(grantedTtl(rest)).toBeNull();
    expect(reportedTtl(rest)).toBe(2_000_000);
    expect(legacyTask(t, { pollIntervalMs: 1000 })).toMatchObject({ taskId: 'task_1', status: 'working', ttl: 90_000, pollInterval: 1000, statusMessage: 'step 1: copying (2/5)' });
  });

  it('renders a question in the form subset elicitation allows, and ids any gateway can decode', () => {
    const approval = z.toJSONSchema(z.object({ approved: z.boolean(), keep: z.array(z.string()).optional(), note: z.string().max(200).optional() }), { io: 'input' }) as Record<string, any>;
    expect(projectSchema(approval)).toEqual({
      requestedSchema: { type: 'object', properties: { approved: { type: 'boolean' }, note: { type: 'string', maxLength: 200 } }, required: ['approved'] },
      wrapped: false,
    });
    expect(projectSchema({ type: 'object', properties: { grants: { type: 'array', items: { type: 'string' } } }, required: ['grants'] })).toBeNull();
    const wrapped = projectSchema({ type: 'integer', minimum: 1 });
    expect(wrapped).toEqual({ requestedSchema: { type: 'object', properties: { value: { type: 'integer', minimum: 1 } }, required: ['value'] }, wrapped: true });
    const pending = { key: 'n', question: 'How many?', schema: { type: 'integer' }, deadlineAt: 9e12, onDeadline: 'fail' as const, askedAt: 0 };
    expect(answerFromContent(pending, { value: 3 })).toBe(3);
    const id = inputRequestId({ taskId: 'task_1', key: 'approval', version: 7 });
    expect(parseInputRequestId(id)).toEqual({ taskId: 'task_1', key: 'approval', version: 7 });
    expect(inputRequestId({ taskId: 'task_1', key: 'approval', version: 7 })).not.toBe(id);
    expect(parseInputRequestId(42)).toBeNull();
    expect(parseInputRequestId('belay-input.garbage.x')).toBeNull();
    expect(parseInputKey(inputKey({ key: 'approval', version: 12 }))).toEqual({ key: 'approval', version: 12 });
    expect(parseInputKey('approval')).toBeNull();
    const waiting = task({ state: 'input_required', pendingInput: { key: 'approval', question: 'Approve?', schema: approval, deadlineAt: 9e12, onDeadline: 'fail', askedAt: 0 } });
    expect(detailedTask(waiting, { pollIntervalMs: 1000 })).toMatchObject({
      status: 'input_required',
      ttlMs: 60_000,
      inputRequests: { 'approval@3': { method: 'elicitation/create', params: { mode: 'form', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'task_1' } } } } },
    });
  });
});
