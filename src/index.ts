/**
 * Belay: durable long-running AI-agent tasks. The library entry: task types, the worker, the service, errors.
 * Stores are in `belay/store/sqlite` and `belay/store/postgres`.
 */
export * from './core/errors.js';
export type { Clock } from './core/clock.js';
export { systemClock } from './core/clock.js';
export type { Logger } from './core/logger.js';
export type * from './core/task.js';
export * from './core/task-state.js';
export type * from './store/port.js';
export { defineTaskType, TaskTypeRegistry, DEFAULT_RETRY, type TaskType, type TaskTypeDefinition, type StepDefinition, type RetryPolicy } from './runtime/task-type.js';
export { StepContext, PauseSignal, StopSignal, type Question, type EffectOptions } from './runtime/step-context.js';
export { Worker, expireDeadlines, type WorkerOptions } from './runtime/worker.js';
export { faultPointsFromSpec } from './runtime/fault-points.js';
export * from './agent/index.js';
export { TaskService, type Principal, type CreateTaskRequest, type ListTasksRequest } from './service/task-service.js';
