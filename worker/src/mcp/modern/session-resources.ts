import { z } from "zod";
import { SESSION_ID_PATTERN } from "../../../../protocol/ids.js";
import { visibleProjects } from "../../auth/access.js";
import type { CallerPrincipal } from "../../auth/tokens.js";
import type { Env } from "../../env.js";
import { AppError } from "../../errors.js";
import { objects } from "../../objects/keys.js";
import type { SessionListing } from "../../projects/project-do.js";
import { McpErrorCode, RpcError } from "../json-rpc.js";
import { CacheHints } from "./cache-hints.js";
import type { ModernMethod } from "./method.js";

/**
 * Droid sessions as MCP resources (2026-07-28): `oubliette://sessions/{session_id}`, read as what
 * `session get` answers — status, caller tools and the caller requests waiting for an answer
 * (`open_requests`, as `session pending` lists them). What a token reads of its sessions is its
 * own and changes with every event: every result is `CacheHints.perToken`.
 */

export const SESSION_URI_TEMPLATE = "oubliette://sessions/{session_id}";
const SESSION_URI = /^oubliette:\/\/sessions\/([^/?#]+)(?:\?since=(0|[1-9][0-9]{0,14}))?$/;
const JSON_MIME = "application/json";
/** Longest URI read: anything longer names nothing here (and is not echoed back whole). */
const MAX_URI_CHARS = 2048;
/** One `resources/list` page covers this many of the token's projects... */
const PROJECTS_PER_PAGE = 20;
/** ...and at most this many live sessions of each. */
const SESSIONS_PER_PROJECT = 50;

/** A session URI: the session, and where a subscription to it starts (`?since=<index>`), if said. */
export interface SessionUri {
  sessionId: string;
  since: number | null;
}

/** The session a URI names, or null when it is not a session URI of this server. */
export function parseSessionUri(uri: string): SessionUri | null {
  const match = SESSION_URI.exec(uri);
  const sessionId = match?.[1];
  if (match === null || sessionId === undefined || !SESSION_ID_PATTERN.test(sessionId)) return null;
  return { sessionId, since: match[2] === undefined ? null : Number(match[2]) };
}

export function sessionUri(sessionId: string): string {
  return `oubliette://sessions/${sessionId}`;
}

/** SEP-2164: an unknown, malformed or unreadable URI (never an empty `contents`, never -32002). */
function resourceNotFound(uri: string): RpcError {
  return new RpcError(McpErrorCode.invalidParams, "Resource not found", { uri });
}

/**
 * What `session get` answers this token about a session, or null when it may not read it or it
 * does not exist (the two look alike, so existence is not leaked).
 */
export async function readableSession(env: Env, principal: CallerPrincipal, sessionId: string) {
  const result = await objects.session(env, sessionId).getInfo(principal, null);
  if (result.ok) return result.value;
  if (result.error.code === "not_found" || result.error.code === "forbidden") return null;
  throw new AppError(result.error.code, result.error.message);
}

/** `resources/templates/list`: the one template. */
export const resourceTemplatesList: ModernMethod = {
  async handle() {
    return {
      resourceTemplates: [
        {
          uriTemplate: SESSION_URI_TEMPLATE,
          name: "session",
          title: "Droid session",
          description:
            "A droid session: its status, caller tools and the caller tool requests waiting for your answer. " +
            "Subscribe with subscriptions/listen for each of its events (add ?since=<index> to replay from an index).",
          mimeType: JSON_MIME,
        },
      ],
      ...CacheHints.perToken,
    };
  },
};

const ListParamsSchema = z.looseObject({
  cursor: z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/)
    .optional(),
});

/**
 * `resources/list`: the live (starting or running) sessions of the projects this token may see,
 * as `session list` finds them, a page of projects at a time (`nextCursor` for the next page).
 */
export const resourcesList: ModernMethod = {
  async handle(call) {
    const params = ListParamsSchema.safeParse(call.params);
    if (!params.success) throw new RpcError(McpErrorCode.invalidParams, "Invalid cursor");
    const offset = Number(params.data.cursor ?? 0);
    const visible = visibleProjects(call.principal);
    const projects = await objects.projectDirectory(call.env).list(visible === null ? null : [...visible]);
    const page = projects.slice(offset, offset + PROJECTS_PER_PAGE);
    const sessions = (await Promise.all(page.map((p) => liveSessions(call.env, p.project_id)))).flat();
    const next = offset + PROJECTS_PER_PAGE;
    return {
      resources: sessions.map((s) => ({
        uri: sessionUri(s.session_id),
        name: s.session_id,
        title: `Session ${s.session_id} (${s.status})`,
        description: `A droid session in project ${s.project_id}, workspace ${s.workspace_id}${s.external_id ? ` (${s.external_id})` : ""}.`,
        mimeType: JSON_MIME,
      })),
      ...(next < projects.length ? { nextCursor: String(next) } : {}),
      ...CacheHints.perToken,
    };
  },
};

async function liveSessions(env: Env, projectId: string): Promise<SessionListing[]> {
  const project = objects.project(env, projectId);
  const pages = await Promise.all(
    (["running", "starting"] as const).map((status) =>
      project.listSessions({ status, ownerTokenId: null, cursor: null, limit: SESSIONS_PER_PROJECT }),
    ),
  );
  // A project the directory lists but that is not set up (yet) has no sessions to show.
  return pages
    .flatMap((listed) => (listed.ok ? listed.value.sessions : []))
    .sort((a, b) => a.created_at.localeCompare(b.created_at))
    .slice(0, SESSIONS_PER_PROJECT);
}

const ReadParamsSchema = z.looseObject({ uri: z.string().max(MAX_URI_CHARS) });

/** `resources/read`: one session as JSON (`?since=` in the URI is a subscription's, ignored here). */
export const resourcesRead: ModernMethod = {
  routedBy: "uri",
  async handle(call) {
    const params = ReadParamsSchema.safeParse(call.params);
    if (!params.success) {
      throw new RpcError(
        McpErrorCode.invalidParams,
        `resources/read needs params.uri (a string of at most ${MAX_URI_CHARS} characters)`,
      );
    }
    const { uri } = params.data;
    const target = parseSessionUri(uri);
    const info = target && (await readableSession(call.env, call.principal, target.sessionId));
    if (!info) throw resourceNotFound(uri);
    return { contents: [{ uri, mimeType: JSON_MIME, text: JSON.stringify(info) }], ...CacheHints.perToken };
  },
};
