/**
 * @module service/admin-service
 * Operator queries for tenant admins: the stranded-task invariant (DESIGN.md §1 rule 7) for the caller's tenant.
 * `belay doctor` reads the same thing through `findStrandedTasks` (reconciler/reconciler.ts) for all tenants.
 */
import type { Clock } from '../core/clock.js';
import { BelayError } from '../core/errors.js';
import { DEFAULT_GRACE_MS, findStrandedTasks, type StrandedTask } from '../reconciler/reconciler.js';
import type { Store } from '../store/port.js';
import type { Principal } from './task-service.js';

export class AdminService {
  constructor(private readonly options: { store: Store; clock: Clock; graceMs?: number }) {}

  /**
   * Non-terminal tasks of the caller's tenant with no recent lease, no future wake-up and no input deadline.
   * @throws BelayError FORBIDDEN for members
   */
  async stranded(who: Principal, req: { graceMs?: number; limit?: number } = {}): Promise<StrandedTask[]> {
    if (who.role === 'member') throw new BelayError('FORBIDDEN', 'The stranded-task report needs a tenant admin');
    const limit = Math.min(Math.max(1, req.limit ?? 100), 1000);
    const graceMs = req.graceMs ?? this.options.graceMs ?? DEFAULT_GRACE_MS;
    if (!Number.isInteger(graceMs) || graceMs < 0) throw new BelayError('VALIDATION', 'grace is a non-negative number of seconds');
    return findStrandedTasks(this.options.store, { now: this.options.clock.now(), graceMs, limit, tenant: who.tenant });
  }
}
