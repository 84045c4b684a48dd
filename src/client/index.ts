/**
 * `belay/client`: a typed client for Belay's REST async task contract, on web-standard `fetch` only (Node ≥ 20,
 * browsers, Deno, Bun, workers). It imports nothing from the server.
 */
export {
  BelayClient,
  BelayProtocolError,
  type AnswerRequest,
  type BelayClientOptions,
  type CallOptions,
  type CreatedTask,
  type CreateTaskRequest,
  type FetchLike,
  type GetTaskOptions,
  type ListEventsOptions,
  type ListTasksFilter,
  type StatusFilter,
  type StreamEventsOptions,
  type TaskNotModified,
  type TaskSnapshot,
  type WaitForTaskOptions,
} from './client.js';
export { BelayApiError, BelayNetworkError, BelayTimeoutError } from './errors.js';
export type { RetryPolicy } from './retry.js';
export { SseParser, readSse, type SseHandlers, type SseMessage } from './sse.js';
export * from './types.js';
export { WebhookReceiver, WebhookVerificationError, InMemoryDedupeStore, type DedupeStore, type WebhookEvent, type WebhookReceiverOptions } from './webhook-receiver.js';
