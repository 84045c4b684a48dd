import { TaskTypeRegistry } from '../runtime/task-type.js';
import { accessReviewType } from './access-review.js';
import { accountMigrationType } from './account-migration.js';
import { agentAccessReviewType } from './agent-access-review.js';
import type { Downstream } from './downstream.js';
import { syntheticType } from './synthetic.js';

export { accessReviewType } from './access-review.js';
export { accountMigrationType, recordId } from './account-migration.js';
export { agentAccessReviewType, ScriptedAccessReviewModel, type ScriptedModelOptions } from './agent-access-review.js';
export { syntheticType } from './synthetic.js';
export * from './downstream.js';

/** The example task types, acting on the given downstream. */
export function exampleRegistry(downstream: Downstream): TaskTypeRegistry {
  return new TaskTypeRegistry([accessReviewType(downstream), accountMigrationType(downstream), syntheticType, agentAccessReviewType(downstream)]);
}
