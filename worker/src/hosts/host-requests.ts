import { Limits } from "../../../protocol/limits.js";
import { allowEntry } from "../../../protocol/network.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import { clip, RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import { encodeError, encodeResult, type JsonRpcId, parseFrame } from "../../../protocol/rpc/messages.js";
import type { SentResult } from "../../../protocol/rpc/method.js";
import type { SetupSpec } from "../../../protocol/setup.js";
import { type SessionSpec, TunnelMethods } from "../../../protocol/tunnel.js";
import type { AuditEntry } from "../audit/audit-log-do.js";
import { fail, ok, type Result } from "../errors.js";
import { errorMessage, type Log } from "../log.js";
import { type WorkspaceSetup, workspaceGitParams } from "../projects/project-config.js";
import { MethodTable } from "../rpc/method-table.js";
import { hostAttachment } from "./host-attachment.js";
import { trySend } from "./host-channels.js";
import type { HostPlacement } from "./host-placement.js";
import type { HostHelloParams } from "./host-reconcile.js";
import type { HostStore } from "./host-store.js";
import type { PendingHostRequests, ProgressListener } from "./pending-host-requests.js";

/** What the host requests need from the registry. */
export interface HostRequestsDeps {
  store: HostStore;
  placement: Pick<HostPlacement, "connectedHost" | "hostOfProject">;
  pending: PendingHostRequests;
  /** Serves `host_hello`: the host registers and is reconciled (see HostReconcile.hello). */
  hello(ws: WebSocket, params: HostHelloParams): Promise<SentResult<typeof TunnelMethods.hostHello>>;
  /** Writes one entry to the audit log (a refused connection of a project's command, here). */
  audit(entry: AuditEntry): Promise<unknown>;
  log: Log;
}

/**
 * The host channel's traffic, both ways: the requests the registry sends to hosts (start a
 * session in its workspace, stop one, a project's container and workspace requests, cancelling
 * one, removing a deleted project) turned into typed results, and the methods hosts call on the
 * registry (`host_hello`, the only one, first on every connection).
 */
export class HostRequests {
  readonly #d: HostRequestsDeps;
  readonly #methods = new MethodTable<WebSocket>();

  constructor(deps: HostRequestsDeps) {
    this.#d = deps;
    this.#methods.handle(TunnelMethods.hostHello, (params, ws) => deps.hello(ws, params));
    this.#methods.onNotification(TunnelMethods.projectProgress, (params, ws) => {
      deps.pending.progress(ws, params.project_id, params.message);
    });
    this.#methods.onNotification(TunnelMethods.projectNetworkBlocked, (params, ws) => {
      const who = hostAttachment(ws);
      const target = `${params.project_id} ${allowEntry(params.host, params.port)}${params.method !== null ? ` ${params.method}` : ""}`;
      const entry = {
        at: Date.now(),
        token_id: who?.tokenId ?? "unknown",
        action: `network.blocked.${params.who}`,
        target,
        outcome: params.code,
      };
      deps
        .audit(entry)
        .catch((err: unknown) =>
          deps.log.error("could not write the audit log", { ...entry, error: errorMessage(err) }),
        );
    });
  }

  /**
   * Asks the session's host to start it: the workspace is made (idempotent; git-initialised or
   * cloned the first time), then the project's container ensured and the agent started in it. A
   * refusal releases the placement.
   */
  async start(input: {
    sessionId: string;
    projectId: string;
    workspaceId: string;
    workspace: WorkspaceSetup;
    project: ProjectSpec;
    spec: SessionSpec;
    setup?: SetupSpec | null | undefined;
  }): Promise<Result<void>> {
    const { store, pending } = this.#d;
    const hostId = store.placement(input.sessionId);
    if (hostId === null) return fail("host_error", `session ${input.sessionId} is not placed on any host`);
    const host = this.#d.placement.connectedHost(hostId);
    if (!host) {
      store.release(input.sessionId);
      return fail(
        "host_error",
        `host ${hostId} disconnected before it could start session ${input.sessionId}`,
      );
    }
    const workspace = await pending.send(host.ws, TunnelMethods.workspaceCreate, {
      project_id: input.projectId,
      workspace_id: input.workspaceId,
      ...workspaceGitParams(input.workspace),
      // A volume this makes is sized by the project's bound from the start.
      ...(input.project.limits.disk_mb !== undefined ? { disk_mb: input.project.limits.disk_mb } : {}),
    });
    const started = workspace.ok
      ? await pending.send(host.ws, TunnelMethods.sessionStart, {
          session_id: input.sessionId,
          project_id: input.projectId,
          workspace_id: input.workspaceId,
          project: input.project,
          spec: input.spec,
          ...(input.workspace.sessionGit !== null ? { git: input.workspace.sessionGit } : {}),
          ...(input.setup ? { setup: input.setup } : {}),
        })
      : workspace;
    if (started.ok) store.markRunning(input.sessionId);
    else store.release(input.sessionId);
    return started.ok ? ok(undefined) : fail(started.error.code, started.error.message);
  }

  /** Releases the session's placement and asks its host (if connected) to stop its droid. */
  async stopSession(input: { sessionId: string; reason: string }): Promise<Result<void>> {
    const hostId = this.#d.store.placement(input.sessionId);
    if (hostId === null) return ok(undefined);
    this.#d.store.release(input.sessionId);
    const host = this.#d.placement.connectedHost(hostId);
    // A host that is away is told when it comes back: its report will name a session it should not run.
    if (!host) return ok(undefined);
    const stopped = await this.#d.pending.send(host.ws, TunnelMethods.sessionStop, {
      session_id: input.sessionId,
      reason: input.reason,
    });
    return stopped.ok ? ok(undefined) : fail(stopped.error.code, stopped.error.message);
  }

  /** A request about a project's container or workspaces, sent to the project's host. */
  async projectRequest(input: {
    projectId: string;
    method: string;
    params: Record<string, unknown>;
    placeWith?: boolean;
    cancelKey?: string;
    timeoutMs?: number;
    onProgress?: ProgressListener;
  }): Promise<Result<unknown>> {
    const host = this.#d.placement.hostOfProject(input.projectId, input.placeWith);
    if (!host.ok) return host;
    return this.#d.pending.send(
      host.value.ws,
      input.method,
      { project_id: input.projectId, ...input.params },
      {
        timeoutMs: input.timeoutMs,
        cancelKey: input.cancelKey,
        ...(input.onProgress ? { progress: { projectId: input.projectId, listener: input.onProgress } } : {}),
      },
    );
  }

  /** Cancels the project request named `cancelKey` (one already answered is left alone). */
  cancelProjectRequest(input: { cancelKey: string; reason: string }): { cancelled: boolean } {
    return { cancelled: this.#d.pending.cancel(input.cancelKey, input.reason) };
  }

  /** The project was deleted: its host removes its container and workspaces (now, or when it is back). */
  async removeProject(input: { projectId: string }): Promise<Result<void>> {
    const hostId = this.#d.store.projectHost(input.projectId);
    if (hostId === null) return ok(undefined);
    this.#d.store.forgetProject(input.projectId);
    const host = this.#d.placement.connectedHost(hostId);
    // A host that is away hears of it when it is back: it reports a project that is not placed there.
    if (!host) return ok(undefined);
    const removed = await this.#d.pending.send(host.ws, TunnelMethods.projectRemove, {
      project_id: input.projectId,
    });
    return removed.ok ? ok(undefined) : fail(removed.error.code, removed.error.message);
  }

  /** A frame from a host: a request it makes, or the answer to one of ours. */
  message(ws: WebSocket, raw: string | ArrayBuffer): void {
    if (typeof raw !== "string") {
      trySend(
        ws,
        encodeError(null, new RpcError(RpcErrorCode.InvalidRequest, "tunnel messages are JSON text")),
      );
      return;
    }
    const frame = parseFrame(raw, { maxBytes: Limits.frameBytes, maxDepth: Limits.jsonDepth });
    switch (frame.kind) {
      case "request":
        this.#serve(ws, frame.id, frame.method, frame.params);
        return;
      case "result":
      case "error":
        if (!this.#d.pending.settle(frame) && frame.kind === "error")
          this.#d.log.warn("host reported an error", { error: frame.error.message });
        return;
      case "notification":
        if (hostAttachment(ws)?.ready === true) this.#methods.notified(frame.method, frame.params, ws);
        return;
      case "invalid":
        this.#d.log.warn("bad host message", { reason: frame.error.message });
        trySend(ws, encodeError(frame.id, frame.error));
        return;
    }
  }

  /** Runs a method the host calls; nothing but `host_hello` before its hello was accepted. */
  #serve(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const ready = hostAttachment(ws)?.ready === true;
    if (!ready && method !== TunnelMethods.hostHello.name) {
      trySend(ws, encodeError(id, new RpcError(RpcErrorCode.Unauthenticated, "send host_hello first")));
      return;
    }
    void Promise.resolve()
      .then(() => this.#methods.dispatch(method, params, ws))
      .then(
        (result) => trySend(ws, encodeResult(id, result)),
        (err: unknown) => {
          const error =
            err instanceof RpcError
              ? err
              : new RpcError(RpcErrorCode.InternalError, "internal error in the host registry");
          if (!(err instanceof RpcError))
            this.#d.log.error("host request failed", { method: clip(method), error: errorMessage(err) });
          trySend(ws, encodeError(id, error));
        },
      );
  }
}
