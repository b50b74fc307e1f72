import { hostPort } from "./format.js";
import { bool, compact, isRecord, type JsonRecord, num, rec, str, strings } from "./json.js";

/**
 * One readable line per session event (protocol/events.ts `SessionEventSchema`). Agent and
 * caller text is untrusted: it is only ever put in text nodes.
 */
export interface SessionEventLine {
  /** The event's position in the session's log: `index` (monotonic per session). */
  position: number;
  type: string;
  at: string | null;
  text: string;
  /** Long text shown folded under `text` (a setup step's output). */
  detail?: string;
  /** The event itself, for views that gather some kinds (the network, the setup). */
  event: JsonRecord;
}

/** The event's identity for "never show twice": `index`, else `seq` for a server that numbers by it. */
function position(event: JsonRecord): number | null {
  return num(event, "index") ?? num(event, "seq");
}

/** Fields every event has; the fallback line leaves them out. */
const BASE = new Set(["type", "session_id", "index", "ts", "at", "seq"]);

function rest(event: JsonRecord): string {
  return compact(Object.fromEntries(Object.entries(event).filter(([key]) => !BASE.has(key))));
}

/** A JSON output line: its `text` (after its `op`/`type`, if any) when it has one, else compact JSON. */
function outputData(data: unknown): string {
  if (!isRecord(data)) return compact(data ?? null);
  const body = str(data, "text") ?? str(data, "message");
  if (body === null) return compact(data);
  const kind = str(data, "op") ?? str(data, "type");
  return kind === null ? body : `${kind}: ${body}`;
}

function approvalSubject(event: JsonRecord): string {
  const command = str(event, "command");
  if (command !== null) return command;
  const path = str(event, "path");
  if (path !== null) return `${path}${event.diff !== undefined ? `\n${str(event, "diff") ?? ""}` : ""}`;
  const tool = str(event, "tool");
  if (tool !== null) return `${tool} ${compact(event.arguments ?? {})}`;
  const host = str(event, "host");
  if (host !== null)
    return `${str(event, "method") ?? "a connection to"} ${hostPort(host, num(event, "port"))}`;
  return str(event, "summary") ?? "";
}

/** Seconds with one decimal, from a duration in milliseconds. */
function seconds(ms: number | null): string {
  return ms === null ? "" : ` in ${(ms / 1000).toFixed(1)} s`;
}

/** How a setup ended: its steps done, or the step that failed and how. */
function setupFinished(e: JsonRecord): string {
  const took = seconds(num(e, "duration_ms"));
  const message = str(e, "message") ?? "";
  if (str(e, "status") === "ok") return `setup finished${took}: ${message}`;
  const step = num(e, "step");
  const exit = e.exit_code === null ? "killed or timed out" : `exit ${compact(e.exit_code ?? null)}`;
  const command = str(e, "command");
  return `setup failed${step !== null ? ` at step ${step + 1}` : ""}${command !== null ? ` (${command}, ${exit})` : ""}${took}: ${message}`;
}

function describe(type: string, e: JsonRecord): string {
  const s = (key: string) => str(e, key) ?? "";
  switch (type) {
    case "droid_output":
      return str(e, "text") ?? outputData(e.data);
    case "droid_log":
      return `log: ${s("text")}`;
    case "droid_status":
      return `droid ${s("status")}${e.exit_code != null ? ` (exit ${compact(e.exit_code)})` : ""}${str(e, "message") ? `: ${s("message")}` : ""}`;
    case "message":
      return `agent: ${s("text")}`;
    case "delta":
      return `agent…: ${s("text")}`;
    case "tool_call":
      return `tool call ${s("name")} ${compact(e.input ?? {})}`;
    case "tool_result":
      return `tool result${bool(e, "is_error") ? " (error)" : ""}: ${s("output")}`;
    case "completion":
      return `turn ended: ${s("stop_reason")}${str(e, "text") ? ` — ${s("text")}` : ""}`;
    case "error":
      return `error: ${s("message")}`;
    case "system":
      return `system ${s("subtype")}${str(e, "message") ? `: ${s("message")}` : ""}`;
    case "message_sent":
      return `message sent: ${s("text")}`;
    case "message_undelivered":
      return `message not yet delivered (${compact(e.waited_seconds)} s): ${s("message")}`;
    case "message_delivered":
      return `message ${compact(e.seq)} delivered`;
    case "usage":
      return `usage: ${compact(e.requests)} requests, ${compact(e.input_tokens)} in / ${compact(e.output_tokens)} out tokens, $${(num(e, "cost_usd") ?? 0).toFixed(4)}`;
    case "session_started":
      return `session started on ${s("host_id")} (${s("runtime")})`;
    case "session_ended":
      return `session ended: ${s("reason")}`;
    case "caller_tools_declared":
      return `caller tools declared by ${s("caller_id") || "—"}: ${compact(e.tools ?? [])}`;
    case "caller_tool_request":
      return `caller tool request ${s("request_id")}: ${s("tool")} ${compact(e.arguments ?? {})}`;
    case "caller_tool_failed":
      return `caller tool request ${s("request_id")} failed (${s("reason")}): ${s("message")}`;
    case "approval_request":
      return `approval request ${s("request_id")} (${s("kind")}): ${approvalSubject(e)}`;
    case "approval_granted":
      return `approval ${s("request_id")} granted (${s("kind")}, ${s("scope")}, by ${s("by")}): ${s("summary")}`;
    case "approval_denied":
      return `approval ${s("request_id")} denied (${s("kind")}, by ${s("by")}): ${s("summary")} — ${s("message")}`;
    case "approval_expired":
      return `approval ${s("request_id")} expired (${s("kind")}): ${s("summary")}`;
    case "network_blocked":
      return `network blocked: ${str(e, "method") ?? "connection"} ${hostPort(s("host"), num(e, "port"))} — ${s("code")}: ${s("reason")}`;
    case "setup_started": {
      const steps = strings(e, "steps");
      return `setup started in workspace ${s("workspace_id")}: ${steps.length} step(s)${steps.map((step, i) => `\n  ${i + 1}. ${step}`).join("")}`;
    }
    case "setup_output":
      return `setup step ${(num(e, "step") ?? 0) + 1} ${s("stream")}: ${s("text").split("\n").filter(Boolean).length} line(s)`;
    case "setup_finished":
      return setupFinished(e);
    case "environment_warning":
      return `environment: ${s("message")}`;
    case "job_started":
      return `job ${s("job_id")} started: ${s("tool")}`;
    case "job_progress":
      return `job ${s("job_id")}: ${s("message")}`;
    case "job_ended": {
      const error = rec(e, "error");
      return `job ${s("job_id")} ${s("status")}${error ? `: ${str(error, "message") ?? ""}` : ""}`;
    }
    default:
      return `${type} ${rest(e)}`;
  }
}

/** The line of one event's JSON text; null for what is not an event (keep-alives, primes). */
export function parseEventLine(data: string): SessionEventLine | null {
  if (data.trim() === "") return null;
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(event)) return null;
  const type = str(event, "type");
  const at = position(event);
  if (type === null || at === null) return null;
  const line: SessionEventLine = {
    position: at,
    type,
    at: str(event, "ts") ?? str(event, "at"),
    text: describe(type, event),
    event,
  };
  if (type === "setup_output") line.detail = str(event, "text") ?? "";
  return line;
}

/** Events after which the pending requests may have changed. */
export function touchesPending(type: string): boolean {
  return type.startsWith("caller_tool_") || type.startsWith("approval_") || type === "session_ended";
}
