/**
 * GitHub's (and GitHub Enterprise Server's) REST call that opens a pull request:
 * `POST /repos/{owner}/{repo}/pulls`, a bearer token, 201 `{html_url, number}`; errors are
 * `{message, errors?: [...]}` (docs.github.com/en/rest/pulls/pulls#create-a-pull-request).
 */
import { z } from "zod";
import type { ForgeApi } from "./forge.js";

const CreatedSchema = z
  .object({ html_url: z.string().min(1), number: z.number().int().positive() })
  .transform((pr) => ({ url: pr.html_url, number: pr.number }));

const ErrorSchema = z.object({
  message: z.string(),
  // Each entry is an object (a custom message, or resource/field/code) or, rarely, a plain string.
  errors: z
    .array(
      z.union([
        z.string(),
        z.object({
          message: z.string().optional(),
          resource: z.string().optional(),
          field: z.string().optional(),
          code: z.string().optional(),
        }),
      ]),
    )
    .optional(),
});

/** `Validation Failed: A pull request already exists for acme:feature.` */
function errorText(body: unknown): string | undefined {
  const parsed = ErrorSchema.safeParse(body);
  if (!parsed.success) return undefined;
  const details = (parsed.data.errors ?? []).map((e) =>
    typeof e === "string"
      ? e
      : (e.message ?? [e.resource, e.field, e.code].filter((part) => part !== undefined).join(" ")),
  );
  const listed = details.filter((d) => d !== "").join("; ");
  return listed === "" ? parsed.data.message : `${parsed.data.message}: ${listed}`;
}

export const GITHUB: ForgeApi = {
  name: "GitHub",
  noun: "pull request",
  pathProblem: (segments) =>
    segments.length === 2 ? undefined : "a GitHub repository path is owner/repo (two segments)",
  request(target, token, input) {
    const [owner = "", repo = ""] = target.repoPath.split("/");
    return {
      url: `${target.apiUrl}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/pulls`,
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
      },
      body: { title: input.title, head: input.head, base: input.base, body: input.body, draft: input.draft },
    };
  },
  created: CreatedSchema,
  errorText,
};
