/**
 * OpenCode's permission questions (ACP `session/request_permission`, asked by the `permission`
 * rules of its config) as ApprovalRequests. OpenCode 1.18.33 builds the question's tool call from
 * the *permission*: its name gives `kind` and `title`, its metadata is the `rawInput`:
 * - `bash`: kind `execute`, `{command}`; the directory is the call's own (`workdir`, or the `cwd`
 *   OpenCode adds to the call's input in its updates), else the session's.
 * - `edit` (edit, write, apply_patch): kind `edit`, `{filepath, diff}` (a unified diff); apply_patch
 *   adds `files: [{filePath, type, patch, movePath?}]`, asked file by file.
 * - `external_directory`: kind `other`, `{filepath, parentDir}` (a file outside the workspace), or
 *   `{command, directories}` (a command reaching outside it).
 * - `webfetch`: kind `fetch`, `{url}`. `read` (a `.env` file): kind `read`, metadata `{}`: the path
 *   is in the call's input (`filePath`).
 * - an MCP tool: kind `other`, titled with its name `<server>_<tool>`, metadata `{}`: the arguments
 *   are the call's input, from the `tool_call_update` that started it.
 * Anything else (doom_loop, websearch, task, …) is the fallback, its metadata in its command.
 */

import type { ApprovalRequest } from "../../../protocol/approvals.js";
import type { JsonValue } from "../../../protocol/json.js";
import { contentDiffs, type PermissionMapping, type QuestionContext } from "./acp-permission.js";
import {
  absoluteDir,
  type EditVerb,
  editRequest,
  isJsonObject,
  mcpToolRequest,
  readRequest,
  shellRequest,
  shown,
  textField,
  unifiedDiff,
  unmappedRequest,
} from "./acp-request.js";
import type { PermissionToolCall } from "./acp-wire.js";

/** OpenCode's name for an MCP tool: `<server>_<tool>`, each with anything but `[A-Za-z0-9_-]` as `_`. */
const MCP_TOOL_NAME = /^[A-Za-z0-9_-]+$/;

/** The start of OpenCode's names for one MCP server's tools (and of their permission names). */
export function opencodeMcpPrefix(server: string): string {
  return `${server.replace(/[^a-zA-Z0-9_-]/g, "_")}_`;
}

export function opencodePermission(call: PermissionToolCall, context: QuestionContext): PermissionMapping {
  const raw = call.rawInput;
  const title = call.title ?? undefined;
  const asked = (...requests: ApprovalRequest[]): PermissionMapping => ({ ownTool: false, requests });
  const unmapped = (): PermissionMapping => {
    const detail = isJsonObject(raw) && Object.keys(raw).length > 0 ? JSON.stringify(raw) : undefined;
    return asked(unmappedRequest(title, detail, context.cwd));
  };
  const input = context.callInput(call.toolCallId);
  switch (call.kind) {
    case "execute": {
      const command = textField(raw, "command");
      return command === undefined ? unmapped() : asked(shellRequest(command, callDir(input, context.cwd)));
    }
    case "edit":
      return edits(call, context.cwd) ?? unmapped();
    case "fetch": {
      const url = textField(raw, "url");
      return url === undefined ? unmapped() : asked(readRequest(url, context.cwd, `Fetch ${url}`));
    }
    case "read": {
      const path = textField(raw, "filepath") ?? textField(input, "filePath") ?? mcpResource(raw);
      return path === undefined ? unmapped() : asked(readRequest(path, context.cwd));
    }
    case "other": {
      const command = textField(raw, "command");
      if (command !== undefined && isJsonObject(raw) && Array.isArray(raw.directories)) {
        const dirs = raw.directories.filter((dir) => typeof dir === "string").join(", ");
        return asked(
          shellRequest(
            command,
            callDir(input, context.cwd),
            `Run (outside the workspace: ${dirs}): ${command}`,
          ),
        );
      }
      const outside = textField(raw, "filepath") ?? textField(raw, "parentDir");
      if (outside !== undefined)
        return asked(readRequest(outside, context.cwd, `Access outside the workspace: ${outside}`));
      if (title === undefined || !MCP_TOOL_NAME.test(title) || !isEmpty(raw)) return unmapped();
      if (title.startsWith(opencodeMcpPrefix(context.mcpServerName))) return { ownTool: true };
      return asked(mcpToolRequest(title, input, context.cwd));
    }
    default:
      return unmapped();
  }
}

/** A bash call's directory: its `workdir` (relative to the session's), or the `cwd` OpenCode added, else the session's. */
function callDir(input: JsonValue | undefined, cwd: string): string {
  const dir = textField(input, "workdir") ?? textField(input, "cwd");
  return dir ? absoluteDir(dir, cwd) : cwd;
}

function isEmpty(raw: JsonValue | undefined): boolean {
  return raw === undefined || (isJsonObject(raw) && Object.keys(raw).length === 0);
}

/** An MCP resource read (`{server, uri}`), as `mcp:<server>:<uri>` (OpenCode's own pattern for it). */
function mcpResource(raw: JsonValue | undefined): string | undefined {
  const server = textField(raw, "server");
  const uri = textField(raw, "uri");
  return server !== undefined && uri !== undefined ? `mcp:${server}:${uri}` : undefined;
}

const FILE_VERBS: Readonly<Record<string, EditVerb>> = { add: "Create", delete: "Delete", move: "Move" };

/** The files an edit question changes, one request each (a moved file's new path too). */
function edits(call: PermissionToolCall, cwd: string): PermissionMapping | undefined {
  const raw = call.rawInput;
  const files = isJsonObject(raw) && Array.isArray(raw.files) ? raw.files.filter(isJsonObject) : [];
  const requests: ApprovalRequest[] = [];
  for (const file of files) {
    const path = textField(file, "filePath");
    if (path === undefined) continue;
    const verb = FILE_VERBS[textField(file, "type") ?? ""] ?? "Edit";
    const patch = textField(file, "patch");
    const moveTo = textField(file, "movePath");
    requests.push(editRequest(path, patch, cwd, verb));
    if (moveTo !== undefined)
      requests.push(
        editRequest(moveTo, patch, cwd, "Move", `Move ${shown(path, cwd)} to ${shown(moveTo, cwd)}`),
      );
  }
  if (requests.length > 0) return { ownTool: false, requests };
  const path = textField(raw, "filepath");
  if (path === undefined) return undefined;
  const [item] = contentDiffs(call.content).filter((diff) => diff.path === path);
  const diff = textField(raw, "diff") ?? (item ? unifiedDiff(path, item.oldText, item.newText) : undefined);
  return {
    ownTool: false,
    requests: [editRequest(path, diff, cwd, item && !item.oldText ? "Create" : "Edit")],
  };
}
