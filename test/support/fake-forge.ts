/**
 * A fake forge for tests, on loopback: GitHub's create-pull-request call under `/api/v3` (where
 * GitHub Enterprise Server has its API) and GitLab's create-merge-request call under `/api/v4`, on
 * one server, with the auth, answers and error bodies the two APIs document. Every request is
 * recorded (method, path, headers, parsed body) so a test can prove what was sent.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { z } from "zod";

export interface Recorded {
  method: string;
  /** The path as sent (GitLab's project id stays URL-encoded). */
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON body, parsed; the raw text if it is not JSON. */
  body: unknown;
}

export interface FakeForgeOptions {
  token: string;
  /** Repositories that exist, on both forges: "owner/repo", "group/sub/project". */
  repos: string[];
  /** GitHub repositories renamed: old path → new; a call to the old answers 301 as GitHub does. */
  renamed?: Record<string, string>;
}

export interface FakeForge {
  /** http://127.0.0.1:<port>: the "web" base of html_url/web_url; the APIs are under /api/v3, /api/v4. */
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

type Answer = { status: number; body: unknown; location?: string };

const GITHUB_DOCS = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request";
const MAX_BODY_BYTES = 1024 * 1024;

const GitHubCreateSchema = z.object({
  title: z.string().optional(),
  head: z.string().optional(),
  base: z.string().optional(),
  body: z.string().nullable().optional(),
  draft: z.boolean().optional(),
});

const GitLabCreateSchema = z.object({
  source_branch: z.string().optional(),
  target_branch: z.string().optional(),
  title: z.string().optional(),
  description: z.string().optional(),
});

/** Starts the fake forge on 127.0.0.1, port 0. */
export async function startFakeForge(options: FakeForgeOptions): Promise<FakeForge> {
  const requests: Recorded[] = [];
  const repos = new Set(options.repos);
  // Per repository: the last number given, and the open requests by "head base" (GitHub) or source branch (GitLab).
  const state = new Map<string, { last: number; open: Map<string, number> }>();
  const of = (repo: string) => state.get(repo) ?? state.set(repo, { last: 0, open: new Map() }).get(repo);
  let base = "";

  const invalidPr = (errors: object[]): Answer => ({
    status: 422,
    body: { message: "Validation Failed", errors, documentation_url: GITHUB_DOCS },
  });

  function github(repo: string, headers: IncomingHttpHeaders, raw: unknown): Answer {
    if (headers.authorization !== `Bearer ${options.token}`)
      return { status: 401, body: { message: "Bad credentials", documentation_url: GITHUB_DOCS } };
    const moved = options.renamed?.[repo];
    if (moved !== undefined) {
      const url = `${base}/api/v3/repos/${moved}/pulls`;
      return { status: 301, location: url, body: { message: "Moved Permanently", url } };
    }
    const known = repos.has(repo) ? of(repo) : undefined;
    if (known === undefined)
      return { status: 404, body: { message: "Not Found", documentation_url: GITHUB_DOCS } };
    const parsed = GitHubCreateSchema.safeParse(raw);
    if (!parsed.success) return { status: 400, body: { message: "Problems parsing JSON" } };
    const { title, head = "", base: target = "", body = null, draft = false } = parsed.data;
    const missing = (["head", "base", "title"] as const).filter((field) => !parsed.data[field]);
    if (missing.length > 0)
      return invalidPr(missing.map((field) => ({ resource: "PullRequest", field, code: "missing_field" })));
    const label = head.includes(":") ? head : `${repo.split("/")[0]}:${head}`;
    if (known.open.has(`${head} ${target}`))
      return invalidPr([
        { resource: "PullRequest", code: "custom", message: `A pull request already exists for ${label}.` },
      ]);
    const number = ++known.last;
    known.open.set(`${head} ${target}`, number);
    const html_url = `${base}/${repo}/pull/${number}`;
    const pr = {
      number,
      html_url,
      state: "open",
      draft,
      title,
      body,
      head: { ref: head },
      base: { ref: target },
    };
    return { status: 201, body: pr };
  }

  function gitlab(project: string, headers: IncomingHttpHeaders, raw: unknown): Answer {
    if (headers["private-token"] !== options.token)
      return { status: 401, body: { message: "401 Unauthorized" } };
    const known = repos.has(project) ? of(project) : undefined;
    if (known === undefined) return { status: 404, body: { message: "404 Project Not Found" } };
    const parsed = GitLabCreateSchema.safeParse(raw);
    if (!parsed.success) return { status: 400, body: { error: "the body is not a JSON object" } };
    const { source_branch = "", target_branch, title = "", description = null } = parsed.data;
    const missing = (["source_branch", "target_branch", "title"] as const).filter(
      (field) => !parsed.data[field],
    );
    if (missing.length > 0)
      return { status: 400, body: { error: missing.map((f) => `${f} is missing`).join(", ") } };
    const existing = known.open.get(source_branch);
    if (existing !== undefined) {
      const message = [`Another open merge request already exists for this source branch: !${existing}`];
      return { status: 409, body: { message } };
    }
    const iid = ++known.last;
    known.open.set(source_branch, iid);
    const draft = /^(draft:|\[draft\]|\(draft\))/i.test(title);
    const web_url = `${base}/${project}/-/merge_requests/${iid}`;
    const mr = { iid, web_url, state: "opened", title, description, source_branch, target_branch, draft };
    return { status: 201, body: mr };
  }

  function route(method: string, path: string, headers: IncomingHttpHeaders, body: unknown): Answer {
    const pathname = path.split("?")[0] ?? "";
    const pulls = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(pathname);
    if (method === "POST" && pulls !== null) return github(`${pulls[1]}/${pulls[2]}`, headers, body);
    // GitLab names a project by its URL-encoded path (group%2Fsub%2Fproject).
    const mrs = /^\/api\/v4\/projects\/([^/]+)\/merge_requests$/.exec(pathname);
    if (method === "POST" && mrs !== null) return gitlab(decodeURIComponent(mrs[1] ?? ""), headers, body);
    return { status: 404, body: { message: "Not Found" } };
  }

  const server = createServer((req, res) => {
    readBody(req).then(
      (text) => {
        const body = parseBody(text);
        const method = req.method ?? "";
        const path = req.url ?? "";
        requests.push({ method, path, headers: req.headers, body });
        const too = { status: 413, body: { message: "too large" } };
        answer(res, text === null ? too : route(method, path, req.headers, body));
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the fake forge has no TCP address");
  base = `http://127.0.0.1:${address.port}`;
  return {
    url: base,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The request's body as text; null past MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseBody(text: string | null): unknown {
  if (text === null || text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function answer(res: ServerResponse, { status, body, location }: Answer): void {
  const headers: Record<string, string> = { "Content-Type": "application/json; charset=utf-8" };
  if (location !== undefined) headers.Location = location;
  res.writeHead(status, headers).end(JSON.stringify(body));
}
