/**
 * @module agent
 * Durable agent loops: a Vercel AI SDK model and a set of tools as a Belay task type.
 */
export {
  defineAgentTaskType,
  agentTool,
  AgentToolError,
  AGENT_STEP,
  DEFAULT_MAX_TURNS,
  DEFAULT_INLINE_RESULT_BYTES,
  type AgentTool,
  type AgentToolContext,
  type AgentTaskTypeDefinition,
  type AgentCheckpoint,
  type AgentToolCallRecord,
  type AgentToolOutput,
  type AgentOutcome,
  type AgentModelContext,
  type AgentCallSettings,
  type TokenUsage,
} from './define-agent-task-type.js';
