/**
 * What `wrangler secret list --format json` told us: the names of the Worker's secrets, or why it
 * could not say. Pure: the caller runs wrangler (wrangler-cli.ts) and hands over its output.
 */
import { z } from "zod";

export type SecretListing =
  /** The Worker's secrets; `workerExists: false` is a first deploy (no Worker, so no secrets yet). */
  | { kind: "listed"; names: readonly string[]; workerExists: boolean }
  /** Not asked: a dry run uploads nothing and needs no Cloudflare account. */
  | { kind: "not_checked"; reason: string }
  /** wrangler could not list them; `detail` is its own error line. */
  | { kind: "unavailable"; cause: ListFailureCause; detail: string };

export type ListFailureCause = "not_logged_in" | "offline" | "failed";

const SecretListSchema = z.array(z.looseObject({ name: z.string() }));

/** The names in wrangler's JSON answer, or null when stdout is not that answer. */
export function parseSecretList(stdout: string): string[] | null {
  // wrangler prints only the JSON array with --format json; anything before it (a stray warning
  // from a newer wrangler) is skipped rather than taken for a failure.
  const start = stdout.indexOf("[");
  if (start < 0) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(stdout.slice(start));
  } catch {
    return null;
  }
  const parsed = SecretListSchema.safeParse(raw);
  return parsed.success ? parsed.data.map((s) => s.name) : null;
}

// wrangler's own wording (4.x): matched on its error output because its exit code is always 1.
const WORKER_NOT_FOUND = /Worker "[^"]*"(?: \(env: [^)]*\))? not found/;
const NOT_LOGGED_IN =
  /not logged in|not authenticated|necessary to set a CLOUDFLARE_API_TOKEN|Authentication error|Invalid access token|Unable to authenticate|\[code: 10000\]|\[code: 9109\]/i;
const OFFLINE =
  /fetch failed|connectivity issue|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|timed out/i;

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are control characters.
const ANSI = /\x1b\[[0-9;]*m/g;

/** wrangler's first error line (`✘ [ERROR] …`), else its first non-empty line, without colours. */
export function firstErrorLine(stderr: string): string {
  const lines = stderr
    .replace(ANSI, "")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const error = lines.find((l) => l.includes("[ERROR]"));
  return (error ?? lines[0] ?? "no output").replace(/^✘\s*\[ERROR\]\s*/, "");
}

/** The listing that a failed `wrangler secret list` (exit code not 0) amounts to. */
export function listingFromFailure(stderr: string): SecretListing {
  const text = stderr.replace(ANSI, "");
  // A Worker that does not exist yet has no secrets: that is an answer, not a failure.
  if (WORKER_NOT_FOUND.test(text)) return { kind: "listed", names: [], workerExists: false };
  const detail = firstErrorLine(stderr);
  if (NOT_LOGGED_IN.test(text)) return { kind: "unavailable", cause: "not_logged_in", detail };
  if (OFFLINE.test(text)) return { kind: "unavailable", cause: "offline", detail };
  return { kind: "unavailable", cause: "failed", detail };
}
