import { expect } from 'vitest';
import type { Store } from '../../src/store/port.js';

/** Checks a task's event log: sequence 1..n without gaps or duplicates, one terminal event, and it is the last. */
export async function expectCleanHistory(store: Store, taskId: string): Promise<string[]> {
  const events = await store.listEvents(taskId, 0, 100_000);
  const seqs = events.map((e) => e.seq);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  const terminal = events.filter((e) => ['completed', 'failed', 'canceled'].includes(e.kind));
  expect(terminal.length).toBeLessThanOrEqual(1);
  if (terminal.length === 1) expect(events.at(-1)!.kind).toBe(terminal[0]!.kind);
  const task = await store.getTask(taskId);
  expect(task!.nextSeq).toBe(seqs.length + 1);
  return events.map((e) => e.kind);
}
