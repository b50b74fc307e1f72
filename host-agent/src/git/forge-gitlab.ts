/**
 * GitLab's REST call that opens a merge request: `POST /projects/{url-encoded path}/merge_requests`
 * with a `PRIVATE-TOKEN`, 201 `{web_url, iid}`. A draft is a title starting `Draft: ` (GitLab's
 * documented way; the API has no draft field on create). Errors are `{message}` (a string, a list,
 * or field → messages) or `{error}` (docs.gitlab.com/api/merge_requests/#create-mr).
 */
import { z } from "zod";
import type { ForgeApi } from "./forge.js";

const CreatedSchema = z
  .object({ web_url: z.string().min(1), iid: z.number().int().positive() })
  .transform((mr) => ({ url: mr.web_url, number: mr.iid }));

const ErrorSchema = z.union([
  z.object({ message: z.union([z.string(), z.array(z.string()), z.record(z.string(), z.unknown())]) }),
  z.object({ error: z.string() }),
]);

const DRAFT_PREFIX = /^(draft:|\[draft\]|\(draft\))/i;

/** `{"source_branch": ["is invalid"]}` → `source_branch is invalid`. */
function fieldText(field: string, value: unknown): string {
  const text = Array.isArray(value) ? value.map(String).join(", ") : JSON.stringify(value);
  return `${field} ${text}`;
}

function errorText(body: unknown): string | undefined {
  const parsed = ErrorSchema.safeParse(body);
  if (!parsed.success) return undefined;
  if ("error" in parsed.data) return parsed.data.error;
  const message = parsed.data.message;
  if (typeof message === "string") return message;
  if (Array.isArray(message)) return message.join("; ");
  return Object.entries(message)
    .map(([field, value]) => fieldText(field, value))
    .join("; ");
}

export const GITLAB: ForgeApi = {
  name: "GitLab",
  noun: "merge request",
  pathProblem: () => undefined,
  request(target, token, input) {
    const title = input.draft && !DRAFT_PREFIX.test(input.title) ? `Draft: ${input.title}` : input.title;
    return {
      url: `${target.apiUrl}/projects/${encodeURIComponent(target.repoPath)}/merge_requests`,
      headers: { "PRIVATE-TOKEN": token, Accept: "application/json" },
      body: { source_branch: input.head, target_branch: input.base, title, description: input.body },
    };
  },
  created: CreatedSchema,
  errorText,
};
