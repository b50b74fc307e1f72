import { type Principal, parsePrincipal } from "./access.js";
import { isRecord, type JsonRecord, rec, str } from "./json.js";

/**
 * The console's one door to the Worker: tool calls through `POST /console/api/call` (the MCP
 * catalogue and access check), and `GET /console/api/me`. The sign-in is an HttpOnly cookie the
 * browser sends itself; every mutation carries the page's CSRF token in a header.
 */

/** A refusal or failure, with the server's code (`unauthorized`, `csrf`, `forbidden`, …) and message. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

let csrf: string | null = null;

/** The CSRF token from `<meta name="oubliette-csrf">`, read once. */
export function csrfToken(): string {
  csrf ??= document.querySelector('meta[name="oubliette-csrf"]')?.getAttribute("content") ?? "";
  return csrf;
}

let signInEnded: () => void = () => {};

/** What to do when any request answers 401: the app tears itself down. */
export function onSignInEnded(handler: () => void): void {
  signInEnded = handler;
}

/** The `{error:{code,message}}` of a refused HTTP request, or a generic one. */
async function httpError(response: Response): Promise<ApiError> {
  const body: unknown = await response.json().catch(() => null);
  const error = isRecord(body) ? rec(body, "error") : null;
  return new ApiError(
    (error && str(error, "code")) ?? `http_${response.status}`,
    (error && str(error, "message")) ?? `The server answered ${response.status} ${response.statusText}`,
  );
}

/** A tool result's value: structured content, else its text as JSON, else the text itself. */
function resultValue(result: JsonRecord): unknown {
  const structured = rec(result, "structuredContent");
  if (structured) return structured;
  const first = Array.isArray(result.content) ? result.content[0] : undefined;
  const body = isRecord(first) ? str(first, "text") : null;
  if (body === null) return null;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** The message of an `isError` result: `structuredContent.error`, else its text. */
function toolError(result: JsonRecord): ApiError {
  const error = rec(rec(result, "structuredContent") ?? {}, "error");
  const first = Array.isArray(result.content) ? result.content[0] : undefined;
  const body = isRecord(first) ? str(first, "text") : null;
  return new ApiError(
    (error && str(error, "code")) ?? "tool_error",
    (error && str(error, "message")) ?? body ?? "The tool failed",
  );
}

/** Calls tool `name` with `args`; answers its value, or throws ApiError. */
export async function callTool(name: string, args: JsonRecord): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch("/console/api/call", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-oubliette-csrf": csrfToken() },
      body: JSON.stringify({ name, arguments: args }),
    });
  } catch {
    throw new ApiError("network", "The console could not reach the server");
  }
  if (response.status === 401) {
    signInEnded();
    throw await httpError(response);
  }
  if (!response.ok) throw await httpError(response);
  const body: unknown = await response.json().catch(() => null);
  if (!isRecord(body)) throw new ApiError("bad_answer", "The server's answer was not a tool result");
  if (body.isError === true) throw toolError(body);
  return resultValue(body);
}

/** Like callTool, and requires an object answer. */
export async function callObject(name: string, args: JsonRecord): Promise<JsonRecord> {
  const value = await callTool(name, args);
  if (!isRecord(value)) throw new ApiError("bad_answer", `${name} answered something unexpected`);
  return value;
}

/** `{job_id, status: pending|running, next}`: the pointer a job-class call answers when its work goes on. */
function jobPointer(value: JsonRecord): string | null {
  const jobId = str(value, "job_id");
  const status = str(value, "status");
  if (jobId === null || str(value, "next") === null) return null;
  return status === "pending" || status === "running" ? jobId : null;
}

/** How long one `job wait` may take (its maximum is 120 s). */
const JOB_WAIT_SECONDS = 30;

/**
 * Calls an action that may run as a job and answers its outcome: when the call answers a job
 * pointer, waits for the job (`job wait`, in slices) and answers its result or throws its error.
 * `onJob` hears the job id while it is waited for.
 */
export async function callSettled(
  name: string,
  args: JsonRecord,
  onJob?: (jobId: string) => void,
): Promise<JsonRecord> {
  let value = await callObject(name, args);
  const jobId = jobPointer(value);
  if (jobId === null) return value;
  onJob?.(jobId);
  for (;;) {
    value = await callObject("job", { action: "wait", job_id: jobId, wait_seconds: JOB_WAIT_SECONDS });
    const status = str(value, "status");
    if (status === "complete") {
      const result = value.result;
      return isRecord(result) ? result : { result: result ?? null };
    }
    if (status === "failed" || status === "cancelled") {
      const error = rec(value, "error");
      throw new ApiError(
        (error && str(error, "code")) ?? status,
        (error && str(error, "message")) ?? `job ${jobId} ${status}`,
      );
    }
  }
}

/** `GET /console/api/me`: the principal, or null once the sign-in ended (401). Other failures throw. */
export async function fetchMe(): Promise<Principal | null> {
  const response = await fetch("/console/api/me", {
    credentials: "same-origin",
    headers: { accept: "application/json" },
  });
  if (response.status === 401) return null;
  if (!response.ok) throw await httpError(response);
  return parsePrincipal(await response.json());
}

/** The JSON Schema of one tool action's arguments (built from its definition on the server). */
export async function actionSchema(tool: string, action: string): Promise<JsonRecord> {
  let response: Response;
  try {
    response = await fetch(`/console/api/schema/${encodeURIComponent(tool)}/${encodeURIComponent(action)}`, {
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError("network", "The console could not reach the server");
  }
  if (response.status === 401) {
    signInEnded();
    throw await httpError(response);
  }
  if (!response.ok) throw await httpError(response);
  const body: unknown = await response.json().catch(() => null);
  if (!isRecord(body)) throw new ApiError("bad_answer", "The server's answer was not a schema");
  return body;
}
