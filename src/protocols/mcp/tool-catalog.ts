/**
 * @module protocols/mcp/tool-catalog
 * Every registered task type is one MCP tool: its name, description and input JSON Schema (the latest version's;
 * older versions stay registered only to finish their tasks). `execution.taskSupport: "optional"`: a task-aware
 * client gets a durable task handle at once, a plain call is held until the task ends.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { TaskTypeRegistry } from '../../runtime/task-type.js';

export function toolFor(registry: TaskTypeRegistry, name: string): Tool | null {
  let type;
  try {
    type = registry.latest(name);
  } catch {
    return null;
  }
  const { $schema: _dialect, ...schema } = type.inputJsonSchema;
  return {
    name: type.name,
    title: type.name,
    description: `${type.description ?? `Runs the "${type.name}" task type.`} Durable Belay task (type version ${type.version}): call it as a task and poll, or call it plainly and wait.`,
    inputSchema: { ...schema, type: 'object' },
    execution: { taskSupport: 'optional' },
  };
}

/** The tools, one per task type name, sorted by name. */
export function toolList(registry: TaskTypeRegistry): Tool[] {
  const names = [...new Set(registry.list().map((t) => t.name))].sort();
  return names.map((n) => toolFor(registry, n)).filter((t): t is Tool => t !== null);
}
