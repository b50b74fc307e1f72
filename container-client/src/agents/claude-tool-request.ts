/**
 * A Claude Code `can_use_tool` question as an ApprovalRequest (docs/approval-hooks.md §1): Bash
 * (and Monitor's command) → shell; Edit, Write, NotebookEdit → edit with the change; Read, and
 * any other tool that would touch a path outside the workspace (`blocked_path`) → read; WebFetch
 * → read of the URL; `mcp__<server>__<tool>` → mcp_tool under that name. Anything else is still
 * asked, as a shell request naming the tool and its exact input. Never throws.
 */
import { type ApprovalRequest, ApprovalRequestSchema } from "../../../protocol/approvals.js";
import type { JsonObject } from "../../../protocol/json.js";
import type { CanUseTool } from "./claude-wire.js";

/** Bounds of ApprovalRequestSchema's fields (a diff and arguments a little under theirs). */
const MAX = { command: 16_384, path: 4096, diff: 60_000, tool: 256, cwd: 4096, arguments: 60_000 } as const;
/** A summary is one line for a person. */
const MAX_SUMMARY = 200;

/** What a question asks, as the session's policy and its caller see it. */
export function claudeToolRequest(question: CanUseTool, cwd: string): ApprovalRequest {
  try {
    const mapped = ApprovalRequestSchema.safeParse(mapQuestion(question, clip(cwd, MAX.cwd)));
    if (mapped.success) return mapped.data;
  } catch {
    // an input of a shape nobody expected: asked as it is, below
  }
  return unmapped(question, clip(cwd, MAX.cwd));
}

/** A question about a tool of MCP server `server` (its tools are `mcp__<server>__<tool>`). */
export function isServerTool(toolName: string, server: string): boolean {
  return toolName.startsWith(`mcp__${server}__`);
}

function mapQuestion(q: CanUseTool, cwd: string): ApprovalRequest {
  const input = q.input;
  switch (q.tool_name) {
    case "Bash":
    case "Monitor": {
      const command = str(input.command);
      if (command === undefined) break;
      const verb = q.tool_name === "Bash" ? "Run" : "Watch";
      return {
        kind: "shell",
        command: clip(command, MAX.command),
        cwd,
        summary: line(str(input.description) ?? `${verb}: ${command}`),
      };
    }
    case "Edit": {
      const path = str(input.file_path);
      const before = str(input.old_string);
      const after = str(input.new_string);
      if (path === undefined || before === undefined || after === undefined) break;
      const every = input.replace_all === true ? " (every occurrence)" : "";
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        diff: clip(editDiff(path, before, after), MAX.diff),
        cwd,
        summary: line(`Edit ${path}${every}`),
      };
    }
    case "Write": {
      const path = str(input.file_path);
      const content = str(input.content);
      if (path === undefined || content === undefined) break;
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        diff: clip(content, MAX.diff),
        cwd,
        summary: line(`Write ${path}`),
      };
    }
    case "NotebookEdit": {
      const path = str(input.notebook_path);
      if (path === undefined) break;
      const mode = str(input.edit_mode);
      const source = str(input.new_source);
      const what =
        mode === "delete"
          ? `Delete a cell of ${path}`
          : mode === "insert"
            ? `Insert a cell into ${path}`
            : `Edit ${path}`;
      return {
        kind: "edit",
        path: clip(path, MAX.path),
        ...(source !== undefined && mode !== "delete" ? { diff: clip(source, MAX.diff) } : {}),
        cwd,
        summary: line(what),
      };
    }
    case "Read": {
      const path = str(input.file_path) ?? nonEmpty(q.blocked_path);
      if (path === undefined) break;
      return { kind: "read", path: clip(path, MAX.path), cwd, summary: line(`Read ${path}`) };
    }
    case "WebFetch": {
      const url = str(input.url);
      if (url === undefined) break;
      return { kind: "read", path: clip(url, MAX.path), cwd, summary: line(`Fetch ${url}`) };
    }
  }
  if (q.tool_name.startsWith("mcp__")) {
    return {
      kind: "mcp_tool",
      tool: clip(q.tool_name, MAX.tool),
      arguments: boundedArguments(input),
      cwd,
      summary: line(`Call ${q.tool_name}`),
    };
  }
  const blocked = nonEmpty(q.blocked_path);
  if (blocked !== undefined)
    return {
      kind: "read",
      path: clip(blocked, MAX.path),
      cwd,
      summary: line(nonEmpty(q.title) ?? `${q.tool_name} reads ${blocked}`),
    };
  return unmapped(q, cwd);
}

/** A question of a tool this module does not know: asked all the same, as the tool and its input. */
function unmapped(q: CanUseTool, cwd: string): ApprovalRequest {
  const name = q.tool_name || "an unnamed tool";
  let input: string;
  try {
    input = JSON.stringify(q.input) ?? "";
  } catch {
    input = "";
  }
  const words = nonEmpty(q.title) ?? nonEmpty(q.description) ?? nonEmpty(q.display_name);
  return {
    kind: "shell",
    command: clip(input === "" ? name : `${name} ${input}`, MAX.command),
    cwd,
    summary: line(words ?? `Use ${name}`),
  };
}

/** Edit's change as a minimal diff: the old text's lines removed, the new text's added. */
export function editDiff(path: string, before: string, after: string): string {
  const lines = (mark: string, text: string) => (text === "" ? [] : text.split("\n").map((l) => mark + l));
  return [`--- ${path}`, `+++ ${path}`, ...lines("-", before), ...lines("+", after)].join("\n");
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

function nonEmpty(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && value.trim() !== "" ? value : undefined;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One line of at most MAX_SUMMARY characters. */
function line(text: string): string {
  return clip(text.replace(/\s+/g, " ").trim(), MAX_SUMMARY) || "Use a tool";
}
