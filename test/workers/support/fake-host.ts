import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { z } from "zod";
import type { AgentEvent } from "../../../protocol/agent-events.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type ApprovalRequest,
} from "../../../protocol/approvals.js";
import {
  CallerToolErrorDataSchema,
  type CallerToolOutcome,
  type CallerToolsConfig,
} from "../../../protocol/caller-tools.js";
import { MIN_HOST_AGENT_VERSION } from "../../../protocol/host-version.js";
import { type JsonObject, JsonValueSchema } from "../../../protocol/json.js";
import type { NetworkUsage } from "../../../protocol/network-activity.js";
import { RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  DroidMessageParamsSchema,
  droidMessageId,
  type HostHelloParamsSchema,
  HostHelloResultSchema,
  type NetworkBlockedParamsSchema,
  SessionEventsResultSchema,
  SessionHelloResultSchema,
  SessionStartParamsSchema,
  SessionStopParamsSchema,
  type SessionUsageParams,
  TUNNEL_PROTOCOL_VERSION,
  TunnelCallerToolsConfigSchema,
  type TunnelFailure,
  TunnelMethod,
} from "../../../protocol/tunnel.js";
import type { GitPushed } from "../../../protocol/tunnel-git.js";
import { WorkspaceCreateParamsSchema } from "../../../protocol/tunnel-projects.js";
import { closeAllSockets } from "./frame-socket.js";
import { until } from "./poll.js";
import { type RpcAnswer, type RpcRequest, RpcSocket, resultOf } from "./rpc-socket.js";
import { HOST_TOKEN } from "./tokens.js";

export type SessionStartParams = z.infer<typeof SessionStartParamsSchema>;
export type SessionStopParams = z.infer<typeof SessionStopParamsSchema>;
export type HostHelloParams = z.input<typeof HostHelloParamsSchema>;

/** A request of the registry to a host, its params checked by the shared schema. */
export type HostRequest =
  | { method: "session_start"; params: SessionStartParams }
  | { method: "session_stop"; params: SessionStopParams }
  | { method: "workspace_create"; params: z.infer<typeof WorkspaceCreateParamsSchema> }
  /** Any other request about a project's container or workspaces. */
  | { method: "project"; name: string; params: Record<string, unknown> };

const PROJECT_METHODS = new Set<string>([
  TunnelMethod.projectEnsure,
  TunnelMethod.projectStop,
  TunnelMethod.projectRemove,
  TunnelMethod.projectRefresh,
  TunnelMethod.workspaceDelete,
  TunnelMethod.workspaceRead,
  TunnelMethod.workspacePush,
  TunnelMethod.workspaceGit,
  TunnelMethod.workspacePullRequest,
  TunnelMethod.containerExec,
  TunnelMethod.containerLogs,
  TunnelMethod.projectNetwork,
]);

/** How a fake host answers: `result` (default `{}`), or an error (code -32000) whose `data.reason` is `reason`. */
export type HostAnswer =
  | { ok: true; result?: unknown }
  | { ok: false; reason: TunnelFailure; message: string };

export interface FakeHostOptions {
  maxSessions?: number;
  /** The sessions the host says it runs (`host_hello` `sessions`). */
  sessions?: string[];
  /** Default: every request succeeds. null: the host never answers. */
  answer?: (request: HostRequest) => HostAnswer | null;
  /** The host token to connect with (default: the configured one). */
  token?: string;
  /** The version it reports in `host_hello` (default: the oldest this Worker supports). */
  agentVersion?: string;
}

/** A host id no other test (or test file) uses, so no placement of another test is reconciled. */
export function uniqueHostId(label = "host"): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}`;
}

/**
 * A host-agent's host channel (`/v1/tunnel/host`) speaking the real tunnel protocol: a
 * `host_hello` request reporting its sessions, then an answer to every `session_start` /
 * `session_stop` request per `answer`. The registry's requests stay readable on `socket`.
 */
export class FakeHost {
  private constructor(
    readonly hostId: string,
    readonly socket: RpcSocket,
    readonly options: FakeHostOptions,
  ) {}

  /** Opens the host channel without saying hello. */
  static async open(hostId: string, options: FakeHostOptions = {}): Promise<FakeHost> {
    const socket = await RpcSocket.connect(
      `/v1/tunnel/host?host_id=${encodeURIComponent(hostId)}`,
      options.token ?? HOST_TOKEN,
    );
    const answer = options.answer ?? ((): HostAnswer => ({ ok: true }));
    socket.onFrame((frame) => {
      if (frame.kind !== "request") return;
      const a = answer(hostRequest(frame));
      if (a === null) return;
      if (a.ok) socket.reply(frame.id, a.result ?? {});
      else
        socket.replyError(frame.id, {
          code: RpcErrorCode.ServerError,
          message: a.message,
          data: { reason: a.reason },
        });
    });
    return new FakeHost(hostId, socket, options);
  }

  /** Opens the host channel and says hello; fails the test when the registry refuses it. */
  static async connect(hostId: string, options: FakeHostOptions = {}): Promise<FakeHost> {
    const host = await FakeHost.open(hostId, options);
    const welcome = HostHelloResultSchema.parse(resultOf(await host.hello()));
    if (welcome.host_id !== hostId) throw new Error(`welcomed as ${welcome.host_id}`);
    return host;
  }

  /** Sends `host_hello` (the options' values, then `overrides`) and returns the answer. */
  hello(overrides: Partial<HostHelloParams> = {}): Promise<RpcAnswer> {
    const params: HostHelloParams = {
      v: TUNNEL_PROTOCOL_VERSION,
      host_id: this.hostId,
      runtime: "process",
      agent_version: this.options.agentVersion ?? MIN_HOST_AGENT_VERSION,
      sessions: this.options.sessions ?? [],
      max_sessions: this.options.maxSessions ?? 10,
      ...overrides,
    };
    return this.socket.ask(TunnelMethod.hostHello, params);
  }

  /** The params of every session_start the registry sent so far. */
  starts(): SessionStartParams[] {
    return this.socket
      .requests(TunnelMethod.sessionStart)
      .map((r) => SessionStartParamsSchema.parse(r.params));
  }

  /** The params of every session_stop the registry sent so far. */
  stops(): SessionStopParams[] {
    return this.socket.requests(TunnelMethod.sessionStop).map((r) => SessionStopParamsSchema.parse(r.params));
  }

  /** The next unread session_stop (that passes `where`). */
  async nextStop(where: (p: SessionStopParams) => boolean = () => true): Promise<SessionStopParams> {
    const request = await this.socket.nextRequest(TunnelMethod.sessionStop, (r) =>
      where(SessionStopParamsSchema.parse(r.params)),
    );
    return SessionStopParamsSchema.parse(request.params);
  }

  close(): void {
    this.socket.close();
  }
}

/** A request of the registry, checked by the shared schemas (anything else fails the test). */
function hostRequest(frame: RpcRequest): HostRequest {
  if (frame.method === TunnelMethod.sessionStart) {
    return { method: "session_start", params: SessionStartParamsSchema.parse(frame.params) };
  }
  if (frame.method === TunnelMethod.sessionStop) {
    return { method: "session_stop", params: SessionStopParamsSchema.parse(frame.params) };
  }
  if (frame.method === TunnelMethod.workspaceCreate) {
    return { method: "workspace_create", params: WorkspaceCreateParamsSchema.parse(frame.params) };
  }
  if (PROJECT_METHODS.has(frame.method)) {
    return {
      method: "project",
      name: frame.method,
      params: z.record(z.string(), z.unknown()).parse(frame.params),
    };
  }
  throw new Error(`the registry sent an unknown request ${frame.method}`);
}

/**
 * A call's answer read back as the droid's outcome. Strict: an error must be a ServerError whose
 * `data.reason` is a caller tool failure reason, or the test fails.
 */
export function outcomeOf(answer: RpcAnswer): CallerToolOutcome {
  if (answer.kind === "result") return { ok: true, result: JsonValueSchema.parse(answer.result) };
  const data = CallerToolErrorDataSchema.safeParse(answer.error.data);
  if (answer.error.code !== RpcErrorCode.ServerError || !data.success) {
    throw new Error(`not a caller tool outcome: ${JSON.stringify(answer.error)}`);
  }
  return { ok: false, error: { reason: data.data.reason, message: answer.error.message } };
}

/**
 * The host-agent's session tunnel (`/v1/tunnel/sessions/:id`): `session_hello`, droid calls as
 * `caller_tool` requests whose id is the call id, cancels, agent events, and the session's
 * `droid_message` requests and `caller_tools_config` notifications.
 */
export class SessionTunnel {
  private constructor(readonly socket: RpcSocket) {}

  static async open(sessionId: string, token = HOST_TOKEN): Promise<SessionTunnel> {
    return new SessionTunnel(await RpcSocket.connect(`/v1/tunnel/sessions/${sessionId}`, token));
  }

  /** Sends `session_hello` and returns the answer as is. */
  helloAnswer(hostId: string, v = TUNNEL_PROTOCOL_VERSION): Promise<RpcAnswer> {
    return this.socket.ask(TunnelMethod.sessionHello, { v, host_id: hostId });
  }

  /** Says hello as `hostId`; fails the test when the session refuses. */
  async hello(hostId: string) {
    return SessionHelloResultSchema.parse(resultOf(await this.helloAnswer(hostId)));
  }

  /** A droid's call of a caller tool, as the host relays it: the request id is the call id. */
  call(callId: string, tool = "send_response", args: JsonObject = {}): void {
    this.socket.request(TunnelMethod.callerTool, { call_id: callId, tool, arguments: args }, callId);
  }

  /** The next outcome the session sends for `callId`. */
  async result(callId: string, timeoutMs?: number): Promise<CallerToolOutcome> {
    return outcomeOf(await this.socket.answer(callId, timeoutMs));
  }

  /** Every answer the session sent for `callId` so far. */
  answers(callId: string): RpcAnswer[] {
    return this.socket.answers(callId);
  }

  /** An agent's permission question, as the host relays it: the request id is the approval id. */
  ask(approvalId: string, request: ApprovalRequest, agent: AgentRuntime = "scripted"): void {
    this.socket.request(TunnelMethod.approval, { approval_id: approvalId, agent, request }, approvalId);
  }

  /** The next decision the session sends for `approvalId`. */
  async decision(approvalId: string, timeoutMs?: number): Promise<ApprovalDecision> {
    return ApprovalDecisionSchema.parse(resultOf(await this.socket.answer(approvalId, timeoutMs)));
  }

  /** The droid no longer waits for `callId`. */
  cancel(callId: string, reason?: string): void {
    this.socket.cancel(callId, reason);
  }

  /** Sends agent events; returns the `stored_seq` the session answers. */
  async events(...events: AgentEvent[]): Promise<number> {
    const answer = await this.socket.ask(TunnelMethod.sessionEvents, { events });
    return SessionEventsResultSchema.parse(resultOf(answer)).stored_seq;
  }

  /** The next message for the droid (a `droid_message` request with id `msg:<seq>`). */
  async nextMessage(where: (m: { seq: number; text: string }) => boolean = () => true) {
    const request = await this.socket.nextRequest(TunnelMethod.droidMessage, (r) =>
      where(DroidMessageParamsSchema.parse(r.params)),
    );
    return { id: request.id, ...DroidMessageParamsSchema.parse(request.params) };
  }

  /** Every `droid_message` the session sent so far. */
  messages(): { seq: number; text: string }[] {
    return this.socket
      .requests(TunnelMethod.droidMessage)
      .map((r) => DroidMessageParamsSchema.parse(r.params));
  }

  /** Confirms message `seq` reached the droid. */
  ackMessage(seq: number): void {
    this.socket.reply(droidMessageId(seq), {});
  }

  /** The next `caller_tools_config` notification (that passes `where`). */
  async nextConfig(where: (c: CallerToolsConfig) => boolean = () => true): Promise<CallerToolsConfig> {
    const n = await this.socket.nextNotification(TunnelMethod.callerToolsConfig, (f) =>
      where(TunnelCallerToolsConfigSchema.parse(f.params)),
    );
    return TunnelCallerToolsConfigSchema.parse(n.params);
  }

  barrier(): Promise<void> {
    return this.socket.barrier();
  }

  /** Tells the session its agent pushed a branch (the request id is the push id); its answer. */
  gitPushed(push: GitPushed): Promise<RpcAnswer> {
    this.socket.request(TunnelMethod.gitPushed, push, push.push_id);
    return this.socket.answer(push.push_id);
  }

  /** Tells the session the host's gate refused a connection (the request id is the report's id); its answer. */
  networkBlocked(report: z.input<typeof NetworkBlockedParamsSchema>): Promise<RpcAnswer> {
    this.socket.request(TunnelMethod.networkBlocked, report, report.blocked_id);
    return this.socket.answer(report.blocked_id);
  }

  /** Reports the hosts the session reached, as the host's gate does. */
  networkUsage(report: NetworkUsage): void {
    this.socket.notify(TunnelMethod.networkUsage, report);
  }

  /** Reports the session's model usage, as the host's model proxy does. */
  usage(report: SessionUsageParams): void {
    this.socket.notify(TunnelMethod.sessionUsage, report);
  }

  /** The next `droid_interrupt` notification. */
  async nextInterrupt(): Promise<void> {
    await this.socket.nextNotification(TunnelMethod.droidInterrupt);
  }

  close(): void {
    this.socket.close();
  }
}

/** The one HostRegistryDurableObject. */
export function registryStub() {
  return env.HOSTS.get(env.HOSTS.idFromName("global"));
}

/**
 * Closes every socket the test opened and waits until the registry has dropped every host
 * connection (use in afterEach), so no test places a session on an earlier test's host.
 */
export async function disconnectAll(): Promise<void> {
  closeAllSockets();
  await until(
    async () => (await runInDurableObject(registryStub(), (_, state) => state.getWebSockets().length)) === 0,
    "the host registry has dropped every host connection",
  );
}
