/**
 * Gemini CLI's permission questions (ACP `session/request_permission`, asked in
 * `--approval-mode default`) as ApprovalRequests. Gemini sends no `rawInput` and no earlier
 * update of the call: all there is is the question's tool call (bundle 0.61.0 `runTool`).
 * - `execute` (run_shell_command): the title is the command; the content's text is
 *   `[in <dir>]` or `[current working directory <dir>]`, then ` (<description>)`.
 * - `edit` (write_file, replace): a `diff` item `{path, oldText, newText}` (oldText null: a new file).
 * - `read`: an attached file outside the workspace, titled `Allow access to absolute path: <path>`.
 * - `fetch` (web_fetch): titled `Fetching content from: <url>` (or the prompt it reads URLs from).
 * - `other` with a call id of `mcp_<server>_<tool>__…`: an MCP tool (the model's name for it is
 *   the id up to `__`), its arguments the content's text (JSON, or a note when over 500 characters).
 * Anything else (ask_user, activate_skill, a prompt's URLs) is the fallback.
 */

import { type JsonValue, parseJson } from "../../../protocol/json.js";
import {
  contentDiffs,
  contentTexts,
  type PermissionMapping,
  type QuestionContext,
} from "./acp-permission.js";
import {
  absoluteDir,
  type EditVerb,
  editRequest,
  mcpToolRequest,
  readRequest,
  shellRequest,
  unifiedDiff,
  unmappedRequest,
} from "./acp-request.js";
import type { PermissionToolCall } from "./acp-wire.js";

/** The tool's name as the model called it: Gemini makes each call's id `<name>__<id>` (or `<name>-<ms>-<n>`). */
export function geminiToolName(toolCallId: string): string | undefined {
  const cut = toolCallId.indexOf("__");
  if (cut > 0) return toolCallId.slice(0, cut);
  return /^(.+)-\d+-\d+$/.exec(toolCallId)?.[1];
}

/** The prefix of the model's names for one MCP server's tools (Gemini's `generateValidName`). */
function mcpPrefix(server: string): string {
  return `mcp_${server}_`.replace(/[^a-zA-Z0-9_\-.:]/g, "_");
}

const SHELL_CONTEXT = /^\[(?:in|current working directory) ([^\]\n]*)\]/;

export function geminiPermission(call: PermissionToolCall, context: QuestionContext): PermissionMapping {
  const title = call.title ?? undefined;
  const [text] = contentTexts(call.content);
  const unmapped = (): PermissionMapping => ({
    ownTool: false,
    requests: [unmappedRequest(title, text, context.cwd)],
  });
  switch (call.kind) {
    case "execute": {
      if (!title) return unmapped();
      const dir = text === undefined ? undefined : SHELL_CONTEXT.exec(text)?.[1];
      const cwd = dir ? absoluteDir(dir, context.cwd) : context.cwd;
      return { ownTool: false, requests: [shellRequest(title, cwd)] };
    }
    case "edit": {
      const diffs = contentDiffs(call.content);
      if (diffs.length === 0) return unmapped();
      const requests = diffs.map((diff) => {
        const verb: EditVerb = !diff.oldText ? "Create" : diff._meta?.kind === "delete" ? "Delete" : "Edit";
        return editRequest(diff.path, unifiedDiff(diff.path, diff.oldText, diff.newText), context.cwd, verb);
      });
      return { ownTool: false, requests };
    }
    case "read": {
      const path = /^Allow access to absolute path: (.+)$/s.exec(title ?? "")?.[1];
      return path ? { ownTool: false, requests: [readRequest(path, context.cwd)] } : unmapped();
    }
    case "fetch": {
      const url = /^Fetching content from: (\S+)$/.exec(title ?? "")?.[1];
      return url ? { ownTool: false, requests: [readRequest(url, context.cwd, `Fetch ${url}`)] } : unmapped();
    }
    case "other": {
      const tool = geminiToolName(call.toolCallId);
      if (tool === undefined || !tool.startsWith("mcp_")) return unmapped();
      if (tool.startsWith(mcpPrefix(context.mcpServerName))) return { ownTool: true };
      return { ownTool: false, requests: [mcpToolRequest(tool, jsonIn(text), context.cwd)] };
    }
    default:
      return unmapped();
  }
}

function jsonIn(text: string | undefined): JsonValue | undefined {
  if (text === undefined) return undefined;
  const parsed = parseJson(text);
  return parsed.ok ? (parsed.value as JsonValue) : undefined;
}
