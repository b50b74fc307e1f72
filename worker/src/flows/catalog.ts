import type { OublietteTool } from "../../../protocol/oubliette-tools.js";
import type { Access, Target } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { AppError } from "../errors.js";
import type { Log } from "../log.js";
import type { ToolContext } from "./context.js";

/** One action of the catalogue, its arguments parsed, ready to run (a job's work). */
export interface CatalogAction {
  /** `tool.action`, or the tool's name for a single-action tool (audit, errors). */
  label: string;
  access: Access;
  target: Target;
  /** The parsed arguments (the action's input schema's output). */
  args: { action: string } & Record<string, unknown>;
  run(ctx: ToolContext): Promise<unknown>;
}

/** How a droid's call of an Oubliette tool runs (see tools/droid-tools.ts). */
export interface DroidCallEnvironment {
  env: Env;
  principal: CallerPrincipal;
  mcp: null;
  log: Log;
  waitUntil(promise: Promise<unknown>): void;
  viaSession: string;
  runsJobs: true;
}

/**
 * What the Durable Objects need of the tool catalogue. The objects sit below the tools (the tools
 * call them), so they never import `tools/`: the Worker's entry module hands the catalogue in with
 * `provideCatalog` before any object runs.
 */
export interface ToolCatalog {
  /** The action a job runs (by tool name and raw arguments), or null when it is not one. */
  jobAction(tool: string, args: unknown): CatalogAction | null;
  /** The Oubliette tools a droid's key may use, narrowed to its scopes. */
  droidTools(principal: CallerPrincipal): OublietteTool[];
  /** Runs a droid's call of an Oubliette tool; answers the MCP tool result. */
  droidCall(name: string, args: Record<string, unknown>, call: DroidCallEnvironment): Promise<unknown>;
}

let provided: ToolCatalog | null = null;

/** Called once by the Worker's entry module (worker/src/index.ts). */
export function provideCatalog(catalog: ToolCatalog): void {
  provided = catalog;
}

/** The catalogue the entry module provided. */
export function catalog(): ToolCatalog {
  if (!provided)
    throw new AppError("internal", "the tool catalogue was not provided (see worker/src/index.ts)");
  return provided;
}
