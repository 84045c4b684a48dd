/**
 * @module protocols/a2a/a2a-error
 * Errors that exist only in the A2A protocol (a JSON-RPC method that does not exist, a version Belay does not
 * speak, an operation on a task in the wrong state for A2A). Everything else is a BelayError from the one
 * catalogue; `error-map.ts` maps both kinds in one table.
 */

export const A2A_ONLY_ERRORS = [
  'PARSE_ERROR',
  'INVALID_REQUEST',
  'METHOD_NOT_FOUND',
  'INVALID_PARAMS',
  'TASK_NOT_CANCELABLE',
  'PUSH_NOTIFICATION_NOT_SUPPORTED',
  'UNSUPPORTED_OPERATION',
  'CONTENT_TYPE_NOT_SUPPORTED',
  'INVALID_AGENT_RESPONSE',
  'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
  'EXTENSION_SUPPORT_REQUIRED',
  'VERSION_NOT_SUPPORTED',
] as const;
export type A2aOnlyCode = (typeof A2A_ONLY_ERRORS)[number];

/** A `google.rpc.BadRequest.FieldViolation`: which request member was wrong and why. */
export interface FieldViolation {
  field: string;
  description: string;
}

export class A2aError extends Error {
  override name = 'A2aError';
  constructor(
    readonly code: A2aOnlyCode,
    message: string,
    readonly options: { fieldViolations?: FieldViolation[]; metadata?: Record<string, string> } = {},
  ) {
    super(message);
  }
}
