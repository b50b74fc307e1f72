/**
 * ApprovalRequests made from what an ACP agent's permission question says: each field clipped to
 * its bound, a one-line summary for a person, an edit's change as a unified diff, and the
 * fallback for a question nothing else fits (kind `shell`, the agent's own words as the command,
 * so it is still asked, never silently allowed).
 */
import { posix } from "node:path";
import { type ApprovalRequest, ApprovalRequestSchema } from "../../../protocol/approvals.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";

/** Bounds of the request's fields (ApprovalRequestSchema), and of the summary and diff we write. */
const MAX = { command: 16_384, path: 4096, diff: 60_000, tool: 256, summary: 200 } as const;

/** `text`, at most `max` characters (the last one `…` when cut). */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A summary line: whitespace runs (newlines too) as one space, at most 200 characters. */
function line(text: string): string {
  return clip(text.replace(/\s+/g, " ").trim(), MAX.summary);
}

/** `path` relative to `cwd` when it lies inside it (for a person's eye), else as it is. */
export function shown(path: string, cwd: string): string {
  if (!posix.isAbsolute(path)) return path;
  const relative = posix.relative(cwd, path);
  return relative === "" || relative.startsWith("..") ? path : relative;
}

/** A directory the agent named, made absolute against the session's working directory. */
export function absoluteDir(dir: string, cwd: string): string {
  return posix.resolve(cwd, dir);
}

/** A request as built, checked against the schema: one that does not pass becomes the fallback. */
function checked(request: ApprovalRequest, title: string): ApprovalRequest {
  const cwd = clip(request.cwd ?? "/", MAX.path);
  const parsed = ApprovalRequestSchema.safeParse({ ...request, cwd });
  return parsed.success ? parsed.data : unmappedRequest(title, undefined, cwd);
}

export function shellRequest(command: string, cwd: string, summary = `Run: ${command}`): ApprovalRequest {
  return checked(
    { kind: "shell", command: clip(command, MAX.command), cwd, summary: line(summary) },
    command,
  );
}

export type EditVerb = "Edit" | "Create" | "Delete" | "Move";

export function editRequest(
  path: string,
  diff: string | undefined,
  cwd: string,
  verb: EditVerb = "Edit",
  summary = `${verb} ${shown(path, cwd)}`,
): ApprovalRequest {
  return checked(
    {
      kind: "edit",
      path: clip(path, MAX.path),
      ...(diff !== undefined ? { diff: clip(diff, MAX.diff) } : {}),
      cwd,
      summary: line(summary),
    },
    summary,
  );
}

export function readRequest(path: string, cwd: string, summary = `Read ${path}`): ApprovalRequest {
  return checked({ kind: "read", path: clip(path, MAX.path), cwd, summary: line(summary) }, summary);
}

export function mcpToolRequest(tool: string, args: JsonValue | undefined, cwd: string): ApprovalRequest {
  const argumentsObject = isJsonObject(args) ? { arguments: args } : {};
  return checked(
    { kind: "mcp_tool", tool: clip(tool, MAX.tool), ...argumentsObject, cwd, summary: line(`Call ${tool}`) },
    `Call ${tool}`,
  );
}

/**
 * A question no mapping fits: kind `shell` with the agent's own title (and `detail`, what else it
 * said) as the command, so a person sees it and a shell rule decides it like any command.
 */
export function unmappedRequest(
  title: string | null | undefined,
  detail: string | undefined,
  cwd: string,
): ApprovalRequest {
  const words = [title, detail].filter((part): part is string => typeof part === "string" && part !== "");
  const command = words.length > 0 ? words.join(" ") : "an unknown tool call";
  return {
    kind: "shell",
    command: clip(command, MAX.command),
    cwd: clip(cwd, MAX.path),
    summary: line(`Allow: ${words[0] ?? command}`),
  };
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A string field of a JSON object, if it is one. */
export function textField(value: JsonValue | undefined, key: string): string | undefined {
  if (!isJsonObject(value)) return undefined;
  const field = value[key];
  return typeof field === "string" ? field : undefined;
}

const CONTEXT_LINES = 3;

function lines(text: string): string[] {
  if (text === "") return [];
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  return all;
}

/** The first line and count of a hunk's side (a side without lines starts at the line before it). */
function range(start: number, count: number): string {
  return `${count === 0 ? start : start + 1},${count}`;
}

/**
 * A unified diff of one file from its text before (null, absent or empty: a new file) and after:
 * one hunk spanning from the first changed line to the last, with three lines of context.
 */
export function unifiedDiff(path: string, oldText: string | null | undefined, newText: string): string {
  const before = lines(oldText ?? "");
  const after = lines(newText);
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  )
    tail++;
  const header = [`--- ${oldText ? path : "/dev/null"}`, `+++ ${after.length === 0 ? "/dev/null" : path}`];
  const oldEnd = before.length - tail;
  const newEnd = after.length - tail;
  if (head === oldEnd && head === newEnd) return `${header.join("\n")}\n`;
  const from = Math.max(0, head - CONTEXT_LINES);
  const trailing = Math.min(tail, CONTEXT_LINES);
  const body = [
    ...before.slice(from, head).map((text) => ` ${text}`),
    ...before.slice(head, oldEnd).map((text) => `-${text}`),
    ...after.slice(head, newEnd).map((text) => `+${text}`),
    ...before.slice(oldEnd, oldEnd + trailing).map((text) => ` ${text}`),
  ];
  const oldCount = oldEnd + trailing - from;
  const newCount = newEnd + trailing - from;
  const hunk = `@@ -${range(from, oldCount)} +${range(from, newCount)} @@`;
  return `${[...header, hunk, ...body].join("\n")}\n`;
}
