import { z } from "zod";
import type { Access, Target } from "../auth/scopes.js";
import type { ToolContext } from "../flows/context.js";
import type { Timing } from "../jobs/timing.js";

/**
 * A tool is defined once: input schema, description, and per action its access level, target,
 * timing class, an example and the handler. The MCP JSON Schema, argument validation, the
 * permission check (`auth/access.ts`), the dispatch, the README's tool table and the permission
 * matrix test all derive from this definition.
 */

export interface ActionDefinition<I extends z.ZodObject = z.ZodObject, O = unknown> {
  description: string;
  input: I;
  access: Access;
  /** global: acts on the installation; project: on one project (named by project_id, or a session's). */
  target: Target;
  timing: Timing;
  /**
   * The caller asked not to wait (e.g. spawn's `wait: false`): true makes this call async_long,
   * answering its job id at once. Only for actions that run as jobs.
   */
  noWait?(args: z.output<I>): boolean;
  /**
   * What to ask the caller's human before the action runs, for an effect that cannot be undone.
   * A stateless (2026-07-28) client that declares `elicitation` is asked it as an input-required
   * round, and the action runs only on a yes; clients that cannot be asked are not.
   */
  confirm?(args: z.output<I>): string;
  /**
   * "failures": only a refused or failed call is audited. For an action as frequent as the data it
   * carries, whose success the session records itself (a caller's answer to its droid's call).
   */
  audit?: "failures";
  /** Arguments that make sense for this action (without `action`); checked against `input` by a test. */
  example: z.input<I>;
  handler(args: z.output<I>, ctx: ToolContext): Promise<O>;
}

/** Binds an action's handler type to its input schema. */
export function action<I extends z.ZodObject, O>(def: ActionDefinition<I, O>): ActionDefinition<I, O> {
  return def;
}

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  /** Unified tools have several actions chosen by the `action` argument; standalone tools have one, named by `single`. */
  actions: Record<string, ActionDefinition>;
  single?: string;
}

/** A unified tool whose actions are chosen with an `action` argument. */
export function defineActionTool(def: Omit<ToolDefinition, "single">): ToolDefinition {
  return def;
}

/** A standalone tool with one action. */
export function defineTool<I extends z.ZodObject, O>(
  def: Omit<ToolDefinition, "actions" | "single"> & { action: ActionDefinition<I, O> },
): ToolDefinition {
  const { action: only, ...rest } = def;
  return { ...rest, actions: { [def.name]: only as unknown as ActionDefinition }, single: def.name };
}

/** `tool.action`, or just the name of a standalone tool: how errors and the audit log name an action. */
export function actionLabel(tool: ToolDefinition, actionName: string): string {
  return tool.single === undefined ? `${tool.name}.${actionName}` : tool.name;
}

/** The zod schema that validates a tool's arguments, `action` included for unified tools. */
export function argumentsSchema(
  tool: ToolDefinition,
): z.ZodType<{ action: string } & Record<string, unknown>> {
  if (tool.single !== undefined) {
    const only = tool.actions[tool.single];
    if (!only) throw new Error(`tool ${tool.name} has no action ${tool.single}`);
    const name = tool.single;
    return only.input.strict().transform((args) => ({ ...args, action: name }));
  }
  const options = Object.entries(tool.actions).map(([name, def]) =>
    def.input.extend({ action: z.literal(name) }).strict(),
  );
  const [first, ...others] = options;
  if (!first) throw new Error(`tool ${tool.name} has no actions`);
  return z.discriminatedUnion("action", [first, ...others]) as unknown as z.ZodType<
    { action: string } & Record<string, unknown>
  >;
}
