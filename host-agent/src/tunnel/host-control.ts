import type { Logger } from "../../../lib/log.js";
import type { HandlerContext, RpcPeer } from "../../../lib/rpc/peer.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { HostDisk } from "../../../protocol/tunnel.js";
import {
  type RuntimeKind,
  TUNNEL_PROTOCOL_VERSION,
  type TunnelFailure,
  TunnelFailureSchema,
  TunnelMethods,
} from "../../../protocol/tunnel.js";
import type { ProjectNetworkBlockedParams } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import type { ProjectManager } from "../projects/project-manager.js";
import { type TunnelTiming, toWs } from "./reconnecting-socket.js";
import { TunnelLink } from "./tunnel-link.js";

/** What the host channel asks of this host's projects and sessions. */
export type HostTarget = Pick<
  ProjectManager,
  | "running"
  | "projects"
  | "reconnectTunnels"
  | "startSession"
  | "stopSession"
  | "ensureProject"
  | "stopProject"
  | "removeProject"
  | "refreshProject"
  | "createWorkspace"
  | "deleteWorkspace"
  | "readWorkspace"
  | "pushWorkspace"
  | "workspaceGit"
  | "pullRequest"
  | "exec"
  | "logs"
  | "setNetwork"
  | "setupWorkspace"
>;

export interface HostControlOptions {
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: RuntimeKind;
  agentVersion: string;
  maxSessions: number;
  /** How this host bounds projects' disk use, reported in its hello. */
  disk?: HostDisk;
  host: HostTarget;
  logger: Logger;
  /** The Worker refused this host for good (bad token): the process should exit. */
  onRefused(status: number, body: string): void;
  timing?: TunnelTiming;
}

const HELLO_TIMEOUT_MS = 15_000;

/**
 * The host channel of the tunnel: registers the host, reports its sessions and project
 * containers, and serves the registry's requests: projects, workspaces, exec and logs, sessions.
 */
export class HostControl {
  readonly #o: HostControlOptions;
  readonly #link: TunnelLink;

  constructor(options: HostControlOptions) {
    this.#o = options;
    const url = new URL("/v1/tunnel/host", toWs(options.workerUrl));
    url.searchParams.set("host_id", options.hostId);
    this.#link = new TunnelLink({
      url: url.toString(),
      hostToken: options.hostToken,
      logger: options.logger,
      timing: options.timing,
      serve: (peer) => serveHostRequests(peer, options.host, options.logger),
      opened: (peer) => void this.#hello(peer),
      onPermanentFailure: options.onRefused,
    });
  }

  start(): void {
    this.#link.start();
  }

  /**
   * The gate refused a connection of a user's command or of a setup: the registry writes it to
   * the audit log. Best effort: a refusal while the channel is down is logged here only.
   */
  networkBlocked(params: ProjectNetworkBlockedParams): void {
    this.#link.peer?.notify(TunnelMethods.projectNetworkBlocked, params);
  }

  close(): void {
    this.#link.close();
  }

  async #hello(peer: RpcPeer): Promise<void> {
    const { hostId, runtime, agentVersion, maxSessions, host, logger } = this.#o;
    try {
      const hello = await peer.request(
        TunnelMethods.hostHello,
        {
          v: TUNNEL_PROTOCOL_VERSION,
          host_id: hostId,
          runtime,
          agent_version: agentVersion,
          sessions: host.running(),
          projects: await host.projects(),
          max_sessions: maxSessions,
          ...(this.#o.disk ? { disk: this.#o.disk } : {}),
        },
        { timeoutMs: HELLO_TIMEOUT_MS, timeoutMessage: "no answer to host_hello" },
      );
      logger.info({ host_id: hello.host_id }, "registered with the Worker");
      host.reconnectTunnels();
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) return;
      logger.error({ err }, "host_hello failed; reconnecting");
      this.#link.drop();
    }
  }
}

/** Registers the registry's requests on a host channel peer; every failure becomes a reasoned error. */
export function serveHostRequests(peer: RpcPeer, host: HostTarget, logger: Logger): void {
  const guard =
    <P, R>(what: (params: P) => string, run: (params: P, ctx: HandlerContext) => Promise<R>) =>
    async (params: P, ctx: HandlerContext): Promise<R> => {
      try {
        return await run(params, ctx);
      } catch (err) {
        throw toRpcError(err, logger, what(params));
      }
    };
  peer.handle(
    TunnelMethods.sessionStart,
    guard(
      (p) => `could not start session ${p.session_id}`,
      async (p) => {
        await host.startSession(p);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.sessionStop,
    guard(
      (p) => `could not stop session ${p.session_id}`,
      async (p) => {
        await host.stopSession(p.session_id, p.reason);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.projectEnsure,
    guard(
      (p) => `could not start project ${p.project_id}`,
      async (p) => {
        const { containerId, started, warnings } = await host.ensureProject(
          p.project_id,
          p.spec,
          false,
          progressOf(peer, p.project_id),
        );
        return { container_id: containerId, started, ...(warnings !== undefined ? { warnings } : {}) };
      },
    ),
  );
  peer.handle(
    TunnelMethods.projectStop,
    guard(
      (p) => `could not stop project ${p.project_id}`,
      async (p) => {
        await host.stopProject(p.project_id, p.reason);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.projectRemove,
    guard(
      (p) => `could not remove project ${p.project_id}`,
      async (p) => {
        await host.removeProject(p.project_id);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.projectRefresh,
    guard(
      (p) => `could not refresh project ${p.project_id}`,
      async (p) => ({
        container_id: (await host.refreshProject(p.project_id, p.spec, progressOf(peer, p.project_id)))
          .containerId,
      }),
    ),
  );
  peer.handle(
    TunnelMethods.workspaceCreate,
    guard(
      (p) => `could not create workspace ${p.workspace_id} of ${p.project_id}`,
      (p) =>
        host.createWorkspace(p.project_id, p.workspace_id, {
          initGit: p.init_git,
          remoteUrl: p.remote_url,
          gitCredential: p.git_credential,
          branch: p.branch,
          diskMb: p.disk_mb,
        }),
    ),
  );
  peer.handle(
    TunnelMethods.workspaceDelete,
    guard(
      (p) => `could not delete workspace ${p.workspace_id} of ${p.project_id}`,
      async (p) => {
        await host.deleteWorkspace(p.project_id, p.workspace_id);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.workspaceRead,
    guard(
      (p) => `could not read ${p.path} in workspace ${p.workspace_id} of ${p.project_id}`,
      (p) => host.readWorkspace(p.project_id, p.workspace_id, p.path, p.kind, p.max_bytes),
    ),
  );
  peer.handle(
    TunnelMethods.workspacePush,
    guard(
      (p) => `could not push ${p.branch ?? "the branch"} of workspace ${p.workspace_id} of ${p.project_id}`,
      (p) =>
        host.pushWorkspace(p.project_id, p.workspace_id, {
          branch: p.branch,
          remoteUrl: p.remote_url,
          credential: p.git_credential,
        }),
    ),
  );
  peer.handle(
    TunnelMethods.workspaceGit,
    guard(
      (p) => `could not run git ${p.op} in workspace ${p.workspace_id} of ${p.project_id}`,
      (p) => host.workspaceGit(p),
    ),
  );
  peer.handle(
    TunnelMethods.workspacePullRequest,
    guard(
      (p) => `could not open a pull request for ${p.head ?? p.workspace_id} of ${p.project_id}`,
      (p) =>
        host.pullRequest(p.project_id, {
          workspaceId: p.workspace_id,
          remoteUrl: p.remote_url,
          credential: p.git_credential,
          forge: p.forge,
          head: p.head,
          base: p.base,
          title: p.title,
          body: p.body,
          draft: p.draft,
        }),
    ),
  );
  peer.handle(
    TunnelMethods.containerExec,
    guard(
      (p) => `could not exec in project ${p.project_id}`,
      // The Worker cancels an exec (its job was cancelled) with notifications/cancelled: kill it.
      (p, ctx) => host.exec(p, ctx.signal),
    ),
  );
  peer.handle(
    TunnelMethods.workspaceSetup,
    guard(
      (p) => `could not run the setup of workspace ${p.workspace_id} of project ${p.project_id}`,
      (p) => host.setupWorkspace(p),
    ),
  );
  peer.handle(
    TunnelMethods.projectNetwork,
    guard(
      (p) => `could not apply the network policies of project ${p.project_id}`,
      async (p) => {
        await host.setNetwork(p.project_id, p.network, p.setup_network);
        return {};
      },
    ),
  );
  peer.handle(
    TunnelMethods.containerLogs,
    guard(
      (p) => `could not read the logs of project ${p.project_id}`,
      (p) => host.logs(p),
    ),
  );
}

/** Tells the Worker how long work for a project comes along (an image's pull), while its request runs. */
function progressOf(peer: RpcPeer, projectId: string): (message: string) => void {
  return (message) => {
    peer.notify(TunnelMethods.projectProgress, { project_id: projectId, message: message.slice(0, 1000) });
  };
}

/** Errors of the host become tunnel errors with a reason; their messages say what to do. */
function toRpcError(err: unknown, logger: Logger, what: string): RpcError {
  if (err instanceof RpcError) return err;
  const message = err instanceof Error ? err.message : String(err);
  let reason: TunnelFailure = "runtime_error";
  if (err instanceof HostError) reason = err.reason;
  else if (typeof err === "object" && err !== null && "code" in err) {
    // RuntimeError: image_not_found, runtime_error, docker_unavailable (a runtime error here).
    const parsed = TunnelFailureSchema.safeParse(err.code);
    if (parsed.success) reason = parsed.data;
  }
  logger.warn({ reason, error: message }, what);
  return new RpcError(RpcErrorCode.ServerError, message, { reason });
}
