/**
 * Opening a pull request (GitHub) or merge request (GitLab) through the forge's REST API, with a
 * token the host holds. The forge is told apart by the project's remote URL (or named); each
 * forge's call and answer shapes live in forge-github.ts / forge-gitlab.ts, the HTTP exchange here.
 *
 * Failures are HostErrors: `invalid` for a target or input that cannot work (and a redirect: the
 * API address is wrong), `rejected` for a 4xx answer (bad credentials, no such repository, a
 * duplicate), `timeout` when the forge does not answer in time, `host_error` for an unreachable
 * forge, a 5xx or an answer that is not what the API documents. Messages carry the forge's status
 * and message, never the token.
 */
import type { z } from "zod";
import type { ForgeSettings } from "../../../protocol/tunnel-git.js";
import { HostError } from "../projects/errors.js";
import { GITHUB } from "./forge-github.js";
import { GITLAB } from "./forge-gitlab.js";

/** The forges the protocol names (`forge.kind`). */
export type ForgeKind = NonNullable<ForgeSettings["kind"]>;

export interface ForgeTarget {
  kind: ForgeKind;
  /** The REST API's base, no trailing "/": https://api.github.com, https://gitlab.example.com/api/v4. */
  apiUrl: string;
  /** "owner/repo", or GitLab's "group/sub/project". */
  repoPath: string;
}

export interface PullRequestInput {
  head: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
}

export interface OpenedPullRequest {
  url: string;
  number: number;
}

/** One forge's create call: how to ask, and how to read its answers. */
export interface ForgeApi {
  name: string;
  noun: string;
  /** Why a repository path (its "/"-separated segments) cannot name a repository here, if it cannot. */
  pathProblem(segments: string[]): string | undefined;
  request(
    target: ForgeTarget,
    token: string,
    input: PullRequestInput,
  ): { url: string; headers: Record<string, string>; body: unknown };
  created: z.ZodType<OpenedPullRequest>;
  /** The forge's error message in an error answer's JSON body, if it has one. */
  errorText(body: unknown): string | undefined;
}

const APIS: Record<ForgeKind, ForgeApi> = { github: GITHUB, gitlab: GITLAB };
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_ANSWER_BYTES = 1024 * 1024;
const MAX_DETAIL_CHARS = 1000;

function invalid(message: string): never {
  throw new HostError("invalid", message);
}

/** Throws `invalid` unless the forge can have a repository at `repoPath`. */
function checkPath(kind: ForgeKind, repoPath: string): void {
  // Both forges name groups, owners and repositories with letters, digits, "_", "-" and ".".
  const segments = repoPath.split("/");
  if (segments.length < 2 || segments.some((s) => !/^[\w.-]+$/.test(s) || s === "." || s === ".."))
    invalid(`${JSON.stringify(repoPath)} is not a repository path (owner/repo)`);
  const problem = APIS[kind].pathProblem(segments);
  if (problem !== undefined) invalid(`${JSON.stringify(repoPath)}: ${problem}`);
}

/** The forge API target of a project's remote (https://, http:// or ssh://) and its forge settings. */
export function forgeTarget(
  remoteUrl: string,
  forge: { kind?: ForgeKind | undefined; api_url?: string | undefined },
): ForgeTarget {
  // Not echoed whole: a URL may carry a user and password.
  const remote = URL.canParse(remoteUrl) ? new URL(remoteUrl) : invalid("the remote is not a URL");
  const shown = `${remote.protocol}//${remote.host}${remote.pathname}`;
  if (!["https:", "http:", "ssh:"].includes(remote.protocol))
    invalid(`remote ${shown} is not an https://, http:// or ssh:// URL, so it names no forge`);
  const repoPath = remote.pathname.replace(/^\/+|\/+$/g, "").replace(/\.git$/, "");
  const host = remote.hostname;
  const kind =
    forge.kind ??
    (host === "github.com"
      ? "github"
      : host === "gitlab.com" || host.startsWith("gitlab.")
        ? "gitlab"
        : invalid(`cannot tell which forge ${host} is: name forge.kind ("github" or "gitlab")`));
  checkPath(kind, repoPath);
  return { kind, apiUrl: apiUrl(remote, kind, forge.api_url), repoPath };
}

function apiUrl(remote: URL, kind: ForgeKind, given: string | undefined): string {
  if (given !== undefined) {
    const parsed = URL.canParse(given) ? new URL(given) : invalid("forge api_url is not a URL");
    if (parsed.username !== "" || parsed.password !== "")
      invalid("forge api_url may not carry a user or password");
    if (!["https:", "http:"].includes(parsed.protocol))
      invalid(`forge api_url ${given} is not an https:// URL`);
    return given.replace(/\/+$/, "");
  }
  // An ssh remote's port is ssh's: the API is on https's. An http(s) remote keeps its own (tests).
  const origin = remote.protocol === "ssh:" ? `https://${remote.hostname}` : remote.origin;
  if (kind === "gitlab") return `${origin}/api/v4`;
  return remote.hostname === "github.com" ? "https://api.github.com" : `${origin}/api/v3`;
}

/** Opens a pull (merge) request on the forge; throws a HostError saying what the forge answered. */
export async function openPullRequest(
  target: ForgeTarget,
  token: string,
  input: PullRequestInput,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<OpenedPullRequest> {
  const api = APIS[target.kind];
  checkPath(target.kind, target.repoPath);
  if (token === "") invalid(`no token to open a ${api.noun} on ${api.name} with`);
  for (const field of ["head", "base", "title"] as const)
    if (input[field].trim() === "") invalid(`a ${api.noun} needs a ${field}`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  const request = api.request(target, token, input);
  // Never the token in a message (a forge may echo what it was sent); cleaned before any cut.
  const clean = (text: string) => text.split(token).join("[token]");
  let answer: Answer;
  try {
    const response = await (options.fetch ?? fetch)(request.url, {
      method: "POST",
      headers: { ...request.headers, "Content-Type": "application/json", "User-Agent": "oubliette-edge" },
      body: JSON.stringify(request.body),
      redirect: "manual",
      signal,
    });
    answer = {
      status: response.status,
      location: response.headers.get("location"),
      ...(await readCapped(response)),
    };
  } catch (err) {
    if (signal.aborted)
      throw new HostError(
        "timeout",
        `${api.name} did not answer the ${api.noun} within ${timeoutMs} ms (it may have been opened anyway)`,
      );
    // fetch's own error is a bare "fetch failed"; its cause says why (ECONNREFUSED, a TLS failure).
    const why =
      err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    throw new HostError("host_error", clean(`could not reach ${api.name} at ${target.apiUrl}: ${why}`));
  }
  return outcome(api, answer, clean);
}

interface Answer {
  status: number;
  location: string | null;
  text: string;
  /** The body was longer than MAX_ANSWER_BYTES, and `text` is its start. */
  truncated: boolean;
}

/** The opened request of a 2xx answer, or the HostError of any other. */
function outcome(api: ForgeApi, answer: Answer, clean: (text: string) => string): OpenedPullRequest {
  const { status, location } = answer;
  let json: unknown;
  try {
    json = JSON.parse(answer.text);
  } catch {}
  if (status >= 200 && status < 300) {
    const created = api.created.safeParse(json);
    if (created.success && !answer.truncated) return created.data;
    const what = answer.truncated ? `is over ${MAX_ANSWER_BYTES} bytes` : "is not what its API documents";
    throw new HostError("host_error", `${api.name}'s answer to the ${api.noun} (${status}) ${what}`);
  }
  if (status >= 300 && status < 400) {
    const to = location === null ? "" : ` to ${clean(location).slice(0, MAX_DETAIL_CHARS)}`;
    invalid(
      `${api.name} answered the ${api.noun} with a redirect (${status}${to}); set forge api_url to the API's address`,
    );
  }
  const detail = clean(api.errorText(json) ?? answer.text.trim()).slice(0, MAX_DETAIL_CHARS) || "no message";
  if (status >= 400 && status < 500)
    throw new HostError("rejected", `${api.name} refused the ${api.noun} (${status}): ${detail}`);
  throw new HostError("host_error", `${api.name} failed the ${api.noun} (${status}): ${detail}`);
}

/** The answer's body as text, at most MAX_ANSWER_BYTES of it (the rest is not read). */
async function readCapped(response: Response): Promise<{ text: string; truncated: boolean }> {
  if (response.body === null) return { text: "", truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString("utf8"), truncated: false };
    if (size + value.byteLength > MAX_ANSWER_BYTES) {
      chunks.push(value.subarray(0, MAX_ANSWER_BYTES - size));
      await reader.cancel().catch(() => {});
      return { text: Buffer.concat(chunks).toString("utf8"), truncated: true };
    }
    chunks.push(value);
    size += value.byteLength;
  }
}
