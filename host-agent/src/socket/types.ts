import type { HandlerContext } from "../../../lib/rpc/peer.js";
import type { AgentEvent } from "../../../protocol/agent-events.js";
import type { ApprovalDecision } from "../../../protocol/approvals.js";
import type { JsonObject, JsonValue } from "../../../protocol/json.js";
import type { ParsedParams, SentResult } from "../../../protocol/rpc/method.js";
import type { ApprovalParams, RunnerAgent, SocketMethods } from "../../../protocol/socket.js";
import type { ContainerConnection } from "./container-connection.js";

/** One caller tool call, as the droid's container-client asked for it. */
export interface CallerToolRequest {
  call_id?: string | undefined;
  tool: string;
  arguments: JsonObject;
}

/** Who a secret presented in `hello` belongs to. */
export interface SocketAuth {
  /** True when `token` is the container's (runner) secret. Constant time. */
  runner(token: string): boolean;
  /** The session whose secret `token` is, or null. Constant time per known session. */
  client(token: string): string | null;
  /**
   * Settles once the sessions' secrets are known. A re-adopted container's runner reports them
   * in its hello; a client that reconnects first waits for that instead of being refused for good.
   */
  readonly settled?: Promise<void>;
}

/** What a droid asks of its session's object through the socket (passed on, answered there). */
export type OublietteForward = (typeof SocketMethods)[
  | "oublietteTools"
  | "oublietteCallTool"
  | "sessionMessage"
  | "sessionEvents"];
export type OublietteMethod = OublietteForward["name"];

/** What the host-agent does with what arrives on a project's container socket. */
export interface ContainerHandlers {
  /**
   * Runs one caller tool call of `sessionId` (the session the connection is bound to): resolves
   * with the caller's result or throws an RpcError. `ctx.signal` aborts when the droid cancels
   * (RequestCancelled) or the connection closes (ConnectionClosed).
   */
  callerTool(sessionId: string, request: CallerToolRequest, ctx: HandlerContext): Promise<JsonValue>;
  /**
   * A droid's use of Oubliette's own tools (`oubliette_tools` / `oubliette_call_tool`), passed on
   * to its session's object, which checks the API key; resolves with its answer as the object sent
   * it (the connection checks it against the socket's schema) or throws an RpcError.
   */
  oubliette(
    sessionId: string,
    method: OublietteMethod,
    params: JsonObject,
    ctx: HandlerContext,
  ): Promise<unknown>;
  /**
   * A connection presented the runner's secret: null admits it, a message refuses it (while
   * another runner is connected, the container has one runner and it is that one).
   */
  admitRunner?(connection: ContainerConnection): string | null;
  /** A connection authenticated as the runner, reporting its agents. */
  runnerConnected(
    connection: ContainerConnection,
    agents: RunnerAgent[],
    ports: { egress?: number | undefined; model?: number | undefined },
  ): void;
  /** The runner's connection closed. */
  runnerGone(connection: ContainerConnection): void;
  /** New (or re-sent) events of one session's agent, from the runner. */
  agentEvents(sessionId: string, events: AgentEvent[]): void;
  /**
   * A permission question of one session's agent, from the runner (re-sent under the same
   * `approval_id` after a reconnect): resolves with the session's decision, or throws an RpcError
   * (a session this host does not run), which the runner turns into a deny. `ctx.signal` aborts
   * when the runner cancels it (RequestCancelled) or its connection closes (ConnectionClosed: it
   * will be re-sent). Without it the method is not served (-32601), as by an older host-agent.
   */
  approval?(params: ApprovalParams, ctx: HandlerContext): Promise<ApprovalDecision>;
  /** The session's agent's own git (git-remote-oubliette): the project remote's branches, a push there. */
  git?: {
    list(
      sessionId: string,
      params: ParsedParams<typeof SocketMethods.gitList>,
    ): Promise<SentResult<typeof SocketMethods.gitList>>;
    fetch(
      sessionId: string,
      params: ParsedParams<typeof SocketMethods.gitFetch>,
    ): Promise<SentResult<typeof SocketMethods.gitFetch>>;
    read(
      sessionId: string,
      params: ParsedParams<typeof SocketMethods.gitFetchRead>,
    ): Promise<SentResult<typeof SocketMethods.gitFetchRead>>;
    push(
      sessionId: string,
      params: ParsedParams<typeof SocketMethods.gitPush>,
    ): Promise<SentResult<typeof SocketMethods.gitPush>>;
  };
}
