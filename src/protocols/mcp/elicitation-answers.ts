/**
 * @module protocols/mcp/elicitation-answers
 * The way back from an elicitation: the client's JSON-RPC response to a `belay-input.…` request, received on any
 * gateway (it is a POST like any other, and may land on a process that never sent the question or has restarted
 * since), is decoded and handed to `TaskService.answer`, which checks the principal, the version and the schema.
 *
 * Outcomes: an accepted, valid answer resumes the task. A declined or dismissed elicitation leaves the question
 * pending (it can still be answered here, through REST, or in a later elicitation). An answer that fails the schema
 * is refused and the question is asked again on the streams of this process that wait on it (`kicks`). An answer
 * to a question that has moved on (stale version, already answered, past its deadline) changes nothing.
 */
import { isBelayError } from '../../core/errors.js';
import type { Principal, TaskService } from '../../service/task-service.js';
import { answerFromContent, parseInputRequestId, type InputRef } from './input-request.js';

export type AnswerOutcome = 'answered' | 'declined' | 'rejected' | 'stale' | 'failed' | 'not_ours';

/** In-process wake-ups for streams waiting on a task's question, so a refused answer is asked again at once. */
export class InputKicks {
  private readonly listeners = new Map<string, Set<() => void>>();

  subscribe(taskId: string, fn: () => void): () => void {
    let set = this.listeners.get(taskId);
    if (!set) this.listeners.set(taskId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.listeners.delete(taskId);
    };
  }

  kick(taskId: string): void {
    for (const fn of [...(this.listeners.get(taskId) ?? [])]) fn();
  }
}

interface JsonRpcResponseLike {
  id?: unknown;
  result?: unknown;
  error?: unknown;
}

/** Whether a JSON-RPC message is a response to one of our elicitations. */
export function isElicitationResponse(message: unknown): message is JsonRpcResponseLike {
  if (typeof message !== 'object' || message === null || 'method' in message) return false;
  const m = message as JsonRpcResponseLike;
  return ('result' in m || 'error' in m) && parseInputRequestId(m.id) !== null;
}

/**
 * Applies one elicitation response for the authenticated caller. `heardBack` runs when the question is still open
 * after this response (declined, refused, failed, moved on), before anyone is asked again: the caller frees the
 * question for another ask. After an accepted answer the task has a new version, so nothing needs freeing.
 */
export async function applyElicitationResponse(
  service: TaskService,
  who: Principal,
  message: JsonRpcResponseLike,
  kicks: InputKicks,
  heardBack: (ref: InputRef) => void = () => {},
): Promise<{ ref: InputRef | null; outcome: AnswerOutcome }> {
  const ref = parseInputRequestId(message.id);
  if (!ref) return { ref, outcome: 'not_ours' };
  const open = (outcome: AnswerOutcome) => {
    heardBack(ref);
    return { ref, outcome };
  };
  if (message.error !== undefined) return open('failed');
  const result = (typeof message.result === 'object' && message.result !== null ? message.result : {}) as { action?: unknown; content?: unknown };
  if (result.action !== 'accept') return open('declined');
  const content = typeof result.content === 'object' && result.content !== null && !Array.isArray(result.content) ? (result.content as Record<string, unknown>) : {};
  try {
    const task = await service.getTask(who, ref.taskId);
    const pending = task.pendingInput && task.pendingInput.key === ref.key ? task.pendingInput : null;
    await service.answer(who, ref.taskId, { version: ref.version, key: ref.key, answer: answerFromContent(pending, content) });
    return { ref, outcome: 'answered' };
  } catch (e) {
    if (isBelayError(e, 'VALIDATION') || isBelayError(e, 'PAYLOAD_TOO_LARGE') || isBelayError(e, 'PAYLOAD_TOO_DEEP') || isBelayError(e, 'INVALID_JSON')) {
      const r = open('rejected');
      kicks.kick(ref.taskId);
      return r;
    }
    if (isBelayError(e)) return open('stale');
    heardBack(ref);
    throw e;
  }
}
