import { z } from "zod";
import type { AgentEvent } from "../../../protocol/agent-events.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";
import {
  type CallerToolOutcome,
  type CallerToolsConfig,
  failureToRpcError,
} from "../../../protocol/caller-tools.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import { Limits } from "../../../protocol/limits.js";
import type { OublietteTool } from "../../../protocol/oubliette-tools.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import {
  Cancelled,
  encodeError,
  encodeNotification,
  encodeRequest,
  encodeResult,
  type JsonRpcId,
  parseFrame,
} from "../../../protocol/rpc/messages.js";
import { checkResult, type ParsedParams, type SentResult } from "../../../protocol/rpc/method.js";
import {
  droidMessageId,
  type HostNotice,
  type SessionNetwork,
  type SessionUsageParams,
  TunnelMethods,
} from "../../../protocol/tunnel.js";
import type { GitPushed } from "../../../protocol/tunnel-git.js";
import type { UsageTotals } from "../../../protocol/usage.js";
import { principalOf } from "../auth/principal-header.js";
import type { Log } from "../log.js";
import { readAttachment } from "../objects/socket-attachment.js";
import { DEFERRED, MethodTable } from "../rpc/method-table.js";
import { requireTunnelVersion } from "../rpc/tunnel-version.js";

const HostAttachmentSchema = z.object({
  role: z.literal("host"),
  hostId: z.string().nullable(),
  /** Set once the host's hello was accepted; nothing else is served before. */
  ready: z.boolean(),
  /** The host an issued host token is bound to (null: the configured token, any host). */
  boundHost: z.string().nullable().optional(),
});
type HostAttachment = z.infer<typeof HostAttachmentSchema>;

function attachment(ws: WebSocket): HostAttachment | null {
  return readAttachment(ws, HostAttachmentSchema);
}

/** What the tunnel serves, in the session's terms. */
export interface HostTunnelHandlers {
  /** The host this session is placed on (null before placement): only it may open the tunnel. */
  placedHost(): string | null;
  /** Whether the session is still live (an ended one refuses hellos). */
  liveStatus(): string | null;
  sessionId(): string;
  storedEventSeq(): number;
  config(): CallerToolsConfig;
  pendingMessages(): { seq: number; text: string }[];
  /** A droid's call: its outcome now, or null to answer when it is decided. */
  callerTool(callId: string, tool: string, args: JsonObject): CallerToolOutcome | null;
  /** An agent asks permission: its decision now, or null to answer when it is decided. */
  approval(approvalId: string, agent: AgentRuntime, request: ApprovalRequest): ApprovalDecision | null;
  /** The droid no longer waits for a caller tool call or an approval (by its id). */
  cancel(id: string, reason: string): void;
  /** Stores agent events; returns the highest seq stored. */
  events(events: AgentEvent[]): number;
  /** The host says the session is over there. */
  /** The session is over on the host; `notice` is what the host saw, shown first as an event of its own. */
  end(reason: string, notice?: HostNotice): Promise<void>;
  messageDelivered(seq: number): void;
  /** The droid lists Oubliette's tools with its API key (-32001 for a bad key). */
  oublietteTools(apiKey: string): Promise<{ tools: OublietteTool[] }>;
  /** The droid calls one of Oubliette's tools with its API key (-32001, -32002, or the tool's result). */
  oublietteCall(apiKey: string, tool: string, args: JsonObject): Promise<unknown>;
  /** The droid starts a child session through its socket (`session_message`). */
  childMessage(params: ParsedParams<typeof TunnelMethods.childMessage>): Promise<unknown>;
  /** The droid reads its session's events, with its children's (`session_events`). */
  ownEvents(params: ParsedParams<typeof TunnelMethods.ownEvents>): Promise<unknown>;
  /** The host's model proxy reports the session's usage (totals). */
  usage(report: SessionUsageParams): void;
  /** The session's agent pushed a branch through the host (told once per push id, however often sent). */
  gitPushed(event: GitPushed): void;
  /** The host's gate refused a connection (told once per report id, however often sent). */
  networkBlocked(params: ParsedParams<typeof TunnelMethods.networkBlocked>): void;
  /** The hosts the session reached, as totals. */
  networkUsage(report: ParsedParams<typeof TunnelMethods.networkUsage>): void;
  /** The session's network, for the host's gate (in the hello's answer). */
  networkHello(): SessionNetwork;
  /** The workspace's setup, as it runs before the agent starts. */
  setupEvent(event: ParsedParams<typeof TunnelMethods.setupEvent>): void;
  /** The usage stored so far and the budget (a restarted host goes on from them). */
  storedUsage(): UsageTotals | null;
  budgetUsd(): number | null;
  log: Log;
}

/**
 * The host-agent's session tunnel: a hibernatable WebSocket the host opens to this object,
 * speaking JSON-RPC. Only the host the session is placed on is accepted (its `session_hello`
 * names it); a newer tunnel replaces an older one. Answers that are decided later (a caller tool
 * call) are sent by request id, so nothing pending lives in memory.
 */
export class HostTunnel {
  readonly #state: DurableObjectState;
  readonly #h: HostTunnelHandlers;
  readonly #methods = new MethodTable<WebSocket>();

  constructor(state: DurableObjectState, handlers: HostTunnelHandlers) {
    this.#state = state;
    this.#h = handlers;
    this.#methods
      .handle(TunnelMethods.sessionHello, (params, ws) => this.#hello(ws, params))
      .handle(TunnelMethods.callerTool, (params) => {
        const outcome = handlers.callerTool(params.call_id, params.tool, params.arguments);
        return outcome === null ? DEFERRED : outcomeResult(outcome);
      })
      .handle(TunnelMethods.approval, (params) => {
        const decision = handlers.approval(params.approval_id, params.agent, params.request);
        return decision === null ? DEFERRED : decision;
      })
      .handle(TunnelMethods.sessionEvents, (params) => ({
        stored_seq: handlers.events(params.events as AgentEvent[]),
      }))
      .handle(TunnelMethods.sessionEnd, async (params) => {
        await handlers.end(params.reason, params.notice);
        return {};
      })
      // The tool layer's answers, checked against the protocol and sent as it made them.
      .handle(TunnelMethods.childMessage, async (params) =>
        checkResult(TunnelMethods.childMessage, await handlers.childMessage(params)),
      )
      .handle(TunnelMethods.ownEvents, async (params) =>
        checkResult(TunnelMethods.ownEvents, await handlers.ownEvents(params)),
      )
      .handle(TunnelMethods.oublietteTools, (params) => handlers.oublietteTools(params.api_key))
      .handle(TunnelMethods.oublietteCall, async (params) =>
        checkResult(
          TunnelMethods.oublietteCall,
          await handlers.oublietteCall(params.api_key, params.tool, params.arguments),
        ),
      )
      .handle(TunnelMethods.gitPushed, (event) => {
        handlers.gitPushed(event);
        return {};
      })
      .handle(TunnelMethods.networkBlocked, (params) => {
        handlers.networkBlocked(params);
        return {};
      })
      .onNotification(TunnelMethods.networkUsage, (report) => handlers.networkUsage(report))
      .onNotification(TunnelMethods.setupEvent, (event) => handlers.setupEvent(event))
      .onNotification(TunnelMethods.sessionUsage, (report) => handlers.usage(report))
      .onNotification(Cancelled, (params) =>
        handlers.cancel(String(params.requestId), params.reason ?? "the droid cancelled the call"),
      );
  }

  static owns(ws: WebSocket): boolean {
    return attachment(ws) !== null;
  }

  accept(request: Request): Response {
    const principal = principalOf(request);
    if (principal?.kind !== "host") return new Response("host token required", { status: 403 });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("expected a WebSocket upgrade", { status: 426 });
    }
    const { 0: client, 1: server } = new WebSocketPair();
    this.#state.acceptWebSocket(server, ["host"]);
    server.serializeAttachment({
      role: "host",
      hostId: null,
      ready: false,
      boundHost: principal.hostId,
    } satisfies HostAttachment);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Sends a call's outcome as the answer to its request (lost if no tunnel: the host asks again). */
  sendOutcome(callId: string, outcome: CallerToolOutcome): void {
    const answer = outcomeResult(outcome);
    this.#send(answer instanceof RpcError ? encodeError(callId, answer) : encodeResult(callId, answer));
  }

  /** Sends an approval's decision as the answer to its request (lost if no tunnel: the host asks again). */
  sendDecision(approvalId: string, decision: ApprovalDecision): void {
    this.#send(encodeResult(approvalId, decision));
  }

  sendConfig(config: CallerToolsConfig): void {
    this.#send(encodeNotification(TunnelMethods.callerToolsConfig, config));
  }

  /** Asks the host to interrupt the droid's turn; false when no host tunnel is open to carry it. */
  sendInterrupt(): boolean {
    const open = this.#state.getWebSockets("host").some((ws) => attachment(ws)?.ready);
    if (open) this.#send(encodeNotification(TunnelMethods.droidInterrupt, {}));
    return open;
  }

  sendMessage(seq: number, text: string): void {
    this.#send(encodeRequest(droidMessageId(seq), TunnelMethods.droidMessage, { seq, text }));
  }

  close(code: number, reason: string): void {
    for (const ws of this.#state.getWebSockets("host")) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
  }

  onMessage(ws: WebSocket, raw: string | ArrayBuffer): void {
    if (typeof raw !== "string") {
      this.#reply(ws, null, new RpcError(RpcErrorCode.InvalidRequest, "tunnel messages are JSON text"));
      return;
    }
    const frame = parseFrame(raw, { maxBytes: Limits.frameBytes, maxDepth: Limits.jsonDepth });
    const ready = attachment(ws)?.ready === true;
    switch (frame.kind) {
      case "request": {
        if (!ready && frame.method !== TunnelMethods.sessionHello.name) {
          this.#reply(ws, frame.id, new RpcError(RpcErrorCode.Unauthenticated, "send session_hello first"));
          return;
        }
        const idField = DEFERRED_ID_FIELD[frame.method];
        if (idField !== undefined && !idIsParam(frame.id, frame.params, idField)) {
          this.#reply(
            ws,
            frame.id,
            new RpcError(
              RpcErrorCode.InvalidRequest,
              `a ${frame.method} request's id must be its ${idField}`,
            ),
          );
          return;
        }
        this.#run(ws, frame.id, frame.method, frame.params);
        return;
      }
      case "notification":
        if (ready) this.#methods.notified(frame.method, frame.params, ws);
        return;
      case "result": {
        const seq = /^msg:(\d+)$/.exec(String(frame.id))?.[1];
        if (seq !== undefined) this.#h.messageDelivered(Number(seq));
        return;
      }
      case "error":
        this.#h.log.warn("host answered with an error", { id: frame.id, error: frame.error.message });
        return;
      case "invalid":
        this.#h.log.warn("bad tunnel message", { reason: frame.error.message });
        this.#reply(ws, frame.id, frame.error);
        return;
    }
  }

  onClose(ws: WebSocket, code: number): void {
    this.#h.log.info("host tunnel closed", { host: attachment(ws)?.hostId, code });
  }

  #run(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    let outcome: unknown;
    try {
      outcome = this.#methods.dispatch(method, params, ws);
    } catch (err) {
      this.#reply(ws, id, err);
      return;
    }
    void Promise.resolve(outcome).then(
      (result) => {
        if (result === DEFERRED) return;
        if (result instanceof RpcError) this.#reply(ws, id, result);
        else trySend(ws, encodeResult(id, result));
      },
      (err: unknown) => this.#reply(ws, id, err),
    );
  }

  #hello(
    ws: WebSocket,
    params: ParsedParams<typeof TunnelMethods.sessionHello>,
  ): SentResult<typeof TunnelMethods.sessionHello> {
    const log = this.#h.log;
    requireTunnelVersion(ws, params.v);
    const status = this.#h.liveStatus();
    if (status !== null) {
      throw new RpcError(RpcErrorCode.ServerError, `session ${this.#h.sessionId()} is ${status}`, {
        reason: "session_ended",
      });
    }
    const bound = attachment(ws)?.boundHost ?? null;
    if (bound !== null && bound !== params.host_id) {
      setTimeout(() => ws.close(4003, "token bound to another host"), 0);
      throw new RpcError(
        RpcErrorCode.Unauthenticated,
        `this host token belongs to host ${bound}, not ${params.host_id}`,
      );
    }
    const placed = this.#h.placedHost();
    if (placed === null || placed !== params.host_id) {
      log.warn("refused a session tunnel from a host the session is not placed on", {
        host: params.host_id,
        placed,
      });
      setTimeout(() => ws.close(4003, "not placed on this host"), 0);
      throw new RpcError(
        RpcErrorCode.ServerError,
        `session ${this.#h.sessionId()} is not placed on host ${params.host_id}`,
        {
          reason: "not_placed",
        },
      );
    }
    // A newer tunnel from the placed host replaces any older one.
    for (const other of this.#state.getWebSockets("host")) {
      if (other !== ws && attachment(other)?.ready) other.close(4000, "replaced by a newer tunnel");
    }
    ws.serializeAttachment({
      role: "host",
      hostId: params.host_id,
      ready: true,
      boundHost: bound,
    } satisfies HostAttachment);
    // After the answer to hello, the host hears of every message it has not confirmed.
    setTimeout(() => {
      for (const m of this.#h.pendingMessages())
        trySend(ws, encodeRequest(droidMessageId(m.seq), TunnelMethods.droidMessage, m));
    }, 0);
    const usage = this.#h.storedUsage();
    const budget = this.#h.budgetUsd();
    return {
      session_id: this.#h.sessionId(),
      stored_event_seq: this.#h.storedEventSeq(),
      ...(usage ? { usage } : {}),
      ...(budget !== null ? { max_cost_usd: budget } : {}),
      network: this.#h.networkHello(),
      config: this.#h.config(),
    };
  }

  #send(text: string): void {
    for (const ws of this.#state.getWebSockets("host")) {
      if (attachment(ws)?.ready) trySend(ws, text);
    }
  }

  #reply(ws: WebSocket, id: JsonRpcId | null, err: unknown): void {
    const error =
      err instanceof RpcError
        ? err
        : new RpcError(RpcErrorCode.InternalError, "internal error in the session object");
    if (!(err instanceof RpcError)) this.#h.log.error("tunnel handler failed", { error: String(err) });
    trySend(ws, encodeError(id, error));
  }
}

/** The wire answer to a call: the caller's result, or an error with the failure's reason. */
function outcomeResult(outcome: CallerToolOutcome): JsonValue | RpcError {
  return outcome.ok ? outcome.result : failureToRpcError(outcome.error.reason, outcome.error.message);
}

/**
 * Requests answered when their outcome is decided, perhaps long after (and after a hibernation):
 * their id must be the param that names them, so the answer can be sent by that name.
 */
const DEFERRED_ID_FIELD: Record<string, string> = {
  [TunnelMethods.callerTool.name]: "call_id",
  [TunnelMethods.approval.name]: "approval_id",
};

function idIsParam(id: JsonRpcId, params: unknown, field: string): boolean {
  return (
    typeof params === "object" && params !== null && field in params && Reflect.get(params, field) === id
  );
}

function trySend(ws: WebSocket, text: string): void {
  try {
    ws.send(text);
  } catch {
    // closed; the host re-sends what it still needs after it reconnects
  }
}
