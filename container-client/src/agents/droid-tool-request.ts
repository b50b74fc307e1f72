/**
 * A Factory Droid `droid.request_permission` question as an ApprovalRequest (docs/approval-hooks.md
 * §5). Each of its `toolUses` says what it asks by `confirmationType` and `details`: `exec` (Execute,
 * and the network tools it words as a line: "Fetch URL: …") → shell, FetchUrl → read of the URL;
 * `edit`, `create`, `apply_patch` → edit with the change; `mcp_tool` → mcp_tool under the name the
 * model sees (`<server>___<tool>`); a sandbox's refusal → read, edit or shell by what it refused.
 * Anything else is still asked, as a shell request naming the tool and its exact input. One
 * question may carry several tool uses: they are decided together, so the request is the riskiest
 * one's (shell over edit over the rest) and its summary names them all. Never throws.
 */
import { z } from "zod";
import { type ApprovalRequest, ApprovalRequestSchema } from "../../../protocol/approvals.js";
import type { JsonObject } from "../../../protocol/json.js";
import { editDiff } from "./claude-tool-request.js";

/** Bounds of ApprovalRequestSchema's fields (a diff and arguments a little under theirs). */
const MAX = { command: 16_384, path: 4096, diff: 60_000, tool: 256, cwd: 4096, arguments: 60_000 } as const;
/** A summary is one line for a person. */
const MAX_SUMMARY = 200;

const Input = z.record(z.string(), z.unknown());

/** One entry of `params.toolUses`: the tool call as the model made it, and what Droid asks of it. */
export const DroidToolUseSchema = z.object({
  toolUse: z.looseObject({ name: z.string().catch(""), input: Input.catch({}) }),
  confirmationType: z.string().optional().catch(undefined),
  details: z.looseObject({}).optional().catch(undefined),
});
export type DroidToolUse = z.infer<typeof DroidToolUseSchema>;

/** `params` of `droid.request_permission`; each tool use is read on its own, so one odd entry spoils none. */
export const DroidPermissionParamsSchema = z.looseObject({ toolUses: z.array(z.unknown()) });

const ExecDetails = z.object({ fullCommand: z.string(), riskLevelReason: z.string().optional() });
const EditDetails = z.object({
  filePath: z.string(),
  oldContent: z.string().optional(),
  newContent: z.string().optional(),
});
const CreateDetails = z.object({ filePath: z.string(), content: z.string() });
const PatchDetails = z.object({
  filePath: z.string(),
  patchContent: z.string(),
  files: z.array(z.object({ filePath: z.string() })).optional(),
});
const McpDetails = z.object({ toolName: z.string(), serverName: z.string().optional() });
const SandboxDetails = z.object({
  violatingToolName: z.string(),
  target: z.string(),
  operationType: z.string(),
  reason: z.string(),
});
const ShieldDetails = z.object({ command: z.string(), reason: z.string() });
const EditChange = z.object({ old_str: z.string(), new_str: z.string() });

/** Whether a tool use calls a tool of MCP server `server` (the model sees them as `<server>___<tool>`). */
export function isServerToolUse(use: DroidToolUse, server: string): boolean {
  const mcp = McpDetails.safeParse(use.details);
  if (use.confirmationType === "mcp_tool" && mcp.success && mcp.data.serverName !== undefined)
    return mcp.data.serverName === server;
  return use.toolUse.name.startsWith(`${server}___`);
}

/** What one tool use asks, as the session's policy and its caller see it. */
export function droidToolRequest(use: DroidToolUse, cwd: string): ApprovalRequest {
  const where = clip(cwd, MAX.cwd);
  try {
    const mapped = ApprovalRequestSchema.safeParse(mapToolUse(use, where));
    if (mapped.success) return mapped.data;
  } catch {
    // details of a shape nobody expected: asked as they are, below
  }
  return unmapped(use.toolUse.name, use.toolUse.input, where);
}

const RISK: Record<ApprovalRequest["kind"], number> = { shell: 0, network: 0, edit: 1, read: 2, mcp_tool: 2 };

/**
 * What a whole question asks: the riskiest tool use's request (the first of equal risk), its
 * summary naming every tool use. A question naming none is asked as it is.
 */
export function droidPermissionRequest(uses: readonly DroidToolUse[], cwd: string): ApprovalRequest {
  const requests = uses.map((use) => droidToolRequest(use, cwd));
  const first = requests[0];
  if (first === undefined) {
    return {
      kind: "shell",
      command: "droid.request_permission",
      cwd: clip(cwd, MAX.cwd),
      summary: "Droid asks permission for an action it does not name",
    };
  }
  if (requests.length === 1) return first;
  const riskiest = requests.reduce((best, r) => (RISK[r.kind] < RISK[best.kind] ? r : best), first);
  return { ...riskiest, summary: line(requests.map((r) => r.summary).join("; ")) };
}

function mapToolUse(use: DroidToolUse, cwd: string): ApprovalRequest {
  const { name, input } = use.toolUse;
  const details = use.details;
  switch (use.confirmationType) {
    case "exec": {
      const url = str(input.url);
      if (name === "FetchUrl" && url !== undefined)
        return { kind: "read", path: clip(url, MAX.path), cwd, summary: line(`Fetch ${url}`) };
      const exec = ExecDetails.safeParse(details);
      const command = exec.success ? exec.data.fullCommand : str(input.command);
      if (command === undefined) break;
      // Droid words a network tool's question as a line of its own ("Web Search: …").
      const summary = name === "Execute" ? `Run: ${command}` : command;
      return { kind: "shell", command: clip(command, MAX.command), cwd, summary: line(summary) };
    }
    case "edit": {
      const edit = EditDetails.safeParse(details);
      const path = edit.success ? edit.data.filePath : str(input.file_path);
      if (path === undefined) break;
      const diff = editChange(path, input) ?? (edit.success ? edit.data.newContent : undefined);
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        ...(diff !== undefined ? { diff: clip(diff, MAX.diff) } : {}),
        cwd,
        summary: line(`Edit ${path}`),
      };
    }
    case "create": {
      const create = CreateDetails.safeParse(details);
      const path = create.success ? create.data.filePath : str(input.file_path);
      const content = create.success ? create.data.content : str(input.content);
      if (path === undefined) break;
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        ...(content !== undefined ? { diff: clip(content, MAX.diff) } : {}),
        cwd,
        summary: line(`Create ${path}`),
      };
    }
    case "apply_patch": {
      const patch = PatchDetails.safeParse(details);
      if (!patch.success) break;
      const paths = patch.data.files?.map((f) => f.filePath) ?? [];
      const path = paths[0] ?? patch.data.filePath;
      const all = paths.length > 1 ? paths.join(", ") : path;
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        diff: clip(patch.data.patchContent, MAX.diff),
        cwd,
        summary: line(`Patch ${all}`),
      };
    }
    case "mcp_tool": {
      const mcp = McpDetails.safeParse(details);
      const tool = name || (mcp.success ? mcp.data.toolName : "");
      if (tool === "") break;
      return {
        kind: "mcp_tool",
        tool: clip(tool, MAX.tool),
        arguments: boundedArguments(input),
        cwd,
        summary: line(`Call ${tool}`),
      };
    }
    case "sandbox_violation": {
      const sandbox = SandboxDetails.safeParse(details);
      if (!sandbox.success) break;
      const { target, operationType, reason, violatingToolName } = sandbox.data;
      const summary = line(`${violatingToolName}: ${reason}`);
      if (operationType === "read") return { kind: "read", path: clip(target, MAX.path), cwd, summary };
      if (operationType === "write") return { kind: "edit", path: clip(target, MAX.path), cwd, summary };
      return { kind: "shell", command: clip(`${violatingToolName} ${target}`, MAX.command), cwd, summary };
    }
    case "droid_shield_violation": {
      const shield = ShieldDetails.safeParse(details);
      if (!shield.success) break;
      return {
        kind: "shell",
        command: clip(shield.data.command, MAX.command),
        cwd,
        summary: line(`Run despite Droid Shield (${shield.data.reason}): ${shield.data.command}`),
      };
    }
  }
  return unmapped(name, input, cwd);
}

/** An Edit's change from its input: one `old_str`→`new_str`, or each of its `changes`. */
function editChange(path: string, input: Record<string, unknown>): string | undefined {
  const one = EditChange.safeParse(input);
  if (one.success) return editDiff(path, one.data.old_str, one.data.new_str);
  const many = z.array(EditChange).safeParse(input.changes);
  if (!many.success || many.data.length === 0) return undefined;
  return many.data.map((c) => editDiff(path, c.old_str, c.new_str)).join("\n");
}

/** A tool use this module cannot read: asked all the same, as the tool and its input. */
function unmapped(toolName: string, input: Record<string, unknown>, cwd: string): ApprovalRequest {
  const name = toolName || "an unnamed tool";
  let json: string;
  try {
    json = JSON.stringify(input) ?? "";
  } catch {
    json = "";
  }
  return {
    kind: "shell",
    command: clip(json === "" || json === "{}" ? name : `${name} ${json}`, MAX.command),
    cwd,
    summary: line(`Use ${name}`),
  };
}

/** An MCP call's arguments as they are, or (past the bound) their JSON cut short under one key. */
function boundedArguments(input: Record<string, unknown>): JsonObject {
  const json = JSON.stringify(input);
  if (json.length <= MAX.arguments) return JSON.parse(json) as JsonObject;
  return { _truncated_json: clip(json, MAX.arguments) };
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One line of at most MAX_SUMMARY characters. */
function line(text: string): string {
  return clip(text.replace(/\s+/g, " ").trim(), MAX_SUMMARY) || "Use a tool";
}
