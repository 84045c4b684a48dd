/**
 * @module runtime/fault-points
 * Named crash points in the real code path (FoundationDB's lesson: faults in production code, selected by a seed
 * or setting, never mocks). Labels: after-claim, before-effect, after-effect-sent, after-ledger-write,
 * before-step-commit, after-step-commit, and after-model-turn (an agent task type's model response was committed and
 * none of its tool calls has run yet; see `agent/define-agent-task-type.ts`).
 */

export const FAULT_LABELS = [
  'after-claim',
  'before-effect',
  'after-effect-sent',
  'after-ledger-write',
  'before-step-commit',
  'after-step-commit',
  'after-model-turn',
  'after-compensation',
  // The webhook dispatcher got a 2xx and has not recorded it yet: the delivery must go out again with the same id.
  'after-webhook-2xx',
] as const;

/**
 * Parses `label:nth[,label:nth...]` (for example `after-effect-sent:3`) into a fault-point function that calls
 * `onHit` (by default: SIGKILL this process) the nth time the label is reached.
 */
export function faultPointsFromSpec(spec: string | undefined, onHit: (label: string) => void = () => process.kill(process.pid, 'SIGKILL')): (label: string) => void {
  if (!spec) return () => {};
  const targets = new Map<string, number>();
  for (const part of spec.split(',')) {
    const [label, nth] = part.split(':');
    if (!label || !(FAULT_LABELS as readonly string[]).includes(label)) throw new Error(`Unknown crash point "${label}" (known: ${FAULT_LABELS.join(', ')})`);
    const n = Number(nth ?? '1');
    if (!Number.isInteger(n) || n < 1) throw new Error(`Crash point "${part}" needs a positive count`);
    targets.set(label, n);
  }
  const hits = new Map<string, number>();
  return (label) => {
    const target = targets.get(label);
    if (target === undefined) return;
    const count = (hits.get(label) ?? 0) + 1;
    hits.set(label, count);
    if (count === target) onHit(label);
  };
}
