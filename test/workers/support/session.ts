import { env } from "cloudflare:workers";
import { z } from "zod";
import type { CallerTool } from "../../../protocol/caller-tools.js";
import { SessionEventSchema } from "../../../protocol/events.js";
import type { NetworkPolicy } from "../../../protocol/network.js";
import type { CallerPrincipal } from "../../../worker/src/auth/tokens.js";
import type {
  ApprovalSettings,
  CallerDeclaration,
  CallerPresence,
  SessionAgentSpec,
  Via,
} from "../../../worker/src/session/types.js";
import { FakeHost, type FakeHostOptions, SessionTunnel, uniqueHostId } from "./fake-host.js";
import { TypedSocket } from "./frame-socket.js";
import { ADMIN, ADMIN_TOKEN } from "./tokens.js";

/** A fresh, well-formed session id. */
export function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `ses_${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export function sessionStub(sessionId: string) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
}

/**
 * A project id no other test uses. Projects are sticky to their host, so each test's sessions
 * get a project of their own unless the test means them to share one.
 */
export function newProjectId(): string {
  return `prj_${[...crypto.getRandomValues(new Uint8Array(12))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export const SEND_RESPONSE: CallerTool = { name: "send_response", inputSchema: { type: "object" } };
export const ANT: CallerDeclaration = { callerId: "ant", tools: [SEND_RESPONSE] };

export interface SpawnOptions {
  owner?: CallerPrincipal;
  caller?: CallerDeclaration | null;
  callerTimeoutMs?: number;
  prompt?: string | null;
  via?: Via | null;
  projectId?: string;
  idleTimeoutMs?: number;
  maxLifetimeMs?: number;
  agent?: SessionAgentSpec;
  callerPresence?: CallerPresence;
  approvals?: ApprovalSettings;
  relocate?: boolean;
  /** The project's remote (its default workspace is cloned from it). */
  remoteUrl?: string;
  /** The session's own network policies. */
  network?: NetworkPolicy[];
}

/** Creates a session through the SessionDurableObject's RPC; a host must be connected. */
export async function spawn(options: SpawnOptions = {}) {
  const sessionId = newSessionId();
  const stub = sessionStub(sessionId);
  const created = await stub.create({
    sessionId,
    projectId: options.projectId ?? newProjectId(),
    workspaceId: "default",
    owner: options.owner ?? ADMIN,
    caller: options.caller === undefined ? ANT : options.caller,
    callerTimeoutMs: options.callerTimeoutMs ?? 60_000,
    callerPresence: options.callerPresence ?? "stream",
    prompt: options.prompt ?? null,
    image: null,
    project: { limits: {}, workspace_isolation: false },
    workspace: {
      initGit: false,
      remoteUrl: options.remoteUrl ?? null,
      gitCredential: null,
      branch: null,
      sessionGit: null,
    },
    via: options.via ?? null,
    agent: options.agent ?? { runtime: "scripted" },
    droidKey: null,
    idleTimeoutMs: options.idleTimeoutMs ?? 0,
    maxLifetimeMs: options.maxLifetimeMs ?? 0,
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.relocate ? { relocate: true } : {}),
    ...(options.network ? { network: options.network } : {}),
  });
  if (!created.ok) throw new Error(`spawn failed: ${created.error.code} ${created.error.message}`);
  return { sessionId, stub, info: created.value };
}

/** What a subscriber WebSocket carries: session events and answers to its own frames. */
const SubscriberMessageSchema = z.union([
  SessionEventSchema,
  z.object({
    type: z.literal("caller_tool_response_result"),
    request_id: z.string(),
    ok: z.boolean(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  }),
  z.object({ type: z.literal("frame_error"), error: z.object({ code: z.string(), message: z.string() }) }),
]);
export type SubscriberMessage = z.infer<typeof SubscriberMessageSchema>;

/** A plain WebSocket subscriber (`/v1/sessions/:id/ws`). */
export function subscribe(sessionId: string, token = ADMIN_TOKEN, query = "") {
  return TypedSocket.connect(`/v1/sessions/${sessionId}/ws${query}`, token, (raw) =>
    SubscriberMessageSchema.parse(raw),
  );
}

/**
 * A session placed on a fresh fake host-agent, which holds the session's tunnel after the real
 * hello. Nobody is subscribed: the caller does not count as present.
 */
export async function hostedSession(options: SpawnOptions = {}, hostOptions: FakeHostOptions = {}) {
  const host = await FakeHost.connect(uniqueHostId(), hostOptions);
  const spawned = await spawn(options);
  if (spawned.info.host_id !== host.hostId) throw new Error(`placed on ${spawned.info.host_id}`);
  const tunnel = await SessionTunnel.open(spawned.sessionId);
  const hello = await tunnel.hello(host.hostId);
  return { ...spawned, host, tunnel, hello };
}

/** A hosted session whose owner is subscribed over WebSocket, so the caller is present. */
export async function liveSession(options: SpawnOptions = {}, hostOptions: FakeHostOptions = {}) {
  const session = await hostedSession(options, hostOptions);
  return { ...session, owner: await subscribe(session.sessionId) };
}

/** The owner's answer to a caller tool request, through the session's RPC. */
export function respond(
  sessionId: string,
  requestId: string,
  answer: { result?: string | number | boolean | null | Record<string, string>; error?: string },
  principal: CallerPrincipal = ADMIN,
) {
  return sessionStub(sessionId).respond({ principal, requestId, ...answer, via: null });
}

/**
 * `readEvents` answers, parsed: its stub type loses the success branch (the event type is too
 * deep for RPC typing), so the answer is checked like any other wire value.
 */
const ReadEventsSchema = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    value: z.object({ events: z.array(SessionEventSchema), next_index: z.number(), status: z.string() }),
  }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
]);

/** `readEvents` through the session's RPC. */
export async function readEvents(sessionId: string, principal = ADMIN, since = 0, limit = 1000) {
  return ReadEventsSchema.parse(await sessionStub(sessionId).readEvents(principal, since, limit, null));
}

/** The session's event log (as the owner), from `since`. */
export async function events(sessionId: string, since = 0) {
  const read = await readEvents(sessionId, ADMIN, since);
  if (!read.ok) throw new Error(`readEvents failed: ${read.error.message}`);
  return read.value;
}
