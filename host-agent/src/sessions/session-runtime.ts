import { randomBytes } from "node:crypto";
import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../../lib/log.js";
import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { SessionSpec } from "../../../protocol/tunnel.js";
import type { AgentRuntime, Workload } from "../runtime/types.js";
import { RelaySocketServer } from "../socket/index.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { SessionTunnel } from "../tunnel/session-tunnel.js";
import { CallerCalls } from "./caller-calls.js";
import { RunnerLink } from "./runner-link.js";

export interface SessionRuntimeOptions {
  sessionId: string;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: AgentRuntime;
  socketRoot: string;
  logger: Logger;
  /** Called once, after the session has been cleaned up on this host. */
  onClosed(sessionId: string): void;
  timing?: TunnelTiming;
}

/** Backstop used before the session object has sent its config (e.g. right after a restart). */
const DEFAULT_BACKSTOP_MS = 5 * 60_000;
/** The host gives up this much before the container-client, so the droid hears the host's reason. */
const HOST_BACKSTOP_MARGIN_MS = 5_000;
/** How long stopping a session lets the runner end its agent before the container is stopped. */
const AGENT_STOP_GRACE_MS = 5_000;

/**
 * One session on this host: its socket directory and container socket (for the runner and the
 * droid's container-client), its tunnel to the session's Durable Object, and its workload. The
 * host-agent holds no agent stdio: messages go to the runner, events come from it, so a
 * host-agent restart leaves the workload running and a new host-agent re-adopts it.
 */
export class SessionRuntime {
  readonly #o: SessionRuntimeOptions;
  readonly #log: Logger;
  readonly #socketDir: string;
  readonly #sessionToken: string;
  readonly #tunnel: SessionTunnel;
  readonly #socket: RelaySocketServer;
  readonly #calls: CallerCalls;
  readonly #runner: RunnerLink;
  #config: CallerToolsConfig | null = null;
  #workload: Workload | null = null;
  #closing: Promise<void> | null = null;

  constructor(options: SessionRuntimeOptions, existing?: { sessionToken: string; socketDir: string }) {
    this.#o = options;
    this.#log = options.logger.child({ session: options.sessionId });
    this.#socketDir = existing?.socketDir ?? join(options.socketRoot, options.sessionId);
    this.#sessionToken = existing?.sessionToken ?? randomBytes(32).toString("hex");
    this.#runner = new RunnerLink({
      logger: this.#log,
      onStartFailed: (message) => void this.end(`the agent could not start: ${message}`),
    });
    this.#tunnel = new SessionTunnel({
      workerUrl: options.workerUrl,
      hostToken: options.hostToken,
      hostId: options.hostId,
      sessionId: options.sessionId,
      logger: this.#log,
      timing: options.timing,
      onConfig: (config) => {
        this.#config = config;
        this.#socket.setCallerToolsConfig(config);
      },
      onDroidMessage: (seq, text, signal) => this.#runner.deliver(seq, text, signal),
      onEventsStored: (seq) => this.#runner.ackEvents(seq),
      onGone: (reason) => void this.stop(reason),
    });
    this.#calls = new CallerCalls({
      relay: (callId, tool, args) => this.#tunnel.callerTool(callId, tool, args),
      cancel: (callId, reason) => this.#tunnel.cancel(callId, reason),
      backstopMs: () =>
        this.#config
          ? Math.max(1_000, this.#config.backstop_ms - HOST_BACKSTOP_MARGIN_MS)
          : DEFAULT_BACKSTOP_MS,
      logger: this.#log,
    });
    this.#socket = new RelaySocketServer({
      path: join(this.#socketDir, "relay.sock"),
      sessionId: options.sessionId,
      sessionToken: this.#sessionToken,
      logger: this.#log,
      handlers: {
        callerTool: (request, ctx) => this.#calls.run(request, ctx),
        runnerConnected: (connection, agent) => this.#runner.attach(connection, agent),
        runnerGone: (connection) => this.#runner.detach(connection),
        agentEvents: (events) => this.#tunnel.pushEvents(events),
      },
    });
  }

  get sessionId(): string {
    return this.#o.sessionId;
  }

  /** Creates the socket, connects the tunnel and launches the workload; throws if the launch fails. */
  async start(spec: SessionSpec): Promise<void> {
    // Reachable by the container's non-root user (uid 1000); the socket itself is 0666.
    await mkdir(this.#socketDir, { recursive: true, mode: 0o711 });
    await chmod(this.#socketDir, 0o711);
    await this.#socket.start();
    this.#tunnel.start();
    try {
      this.#workload = await this.#o.runtime.launch({
        sessionId: this.#o.sessionId,
        sessionToken: this.#sessionToken,
        socketDir: this.#socketDir,
        image: spec.image,
        env: { ...spec.env },
      });
    } catch (err) {
      await this.#cleanup();
      throw err;
    }
    this.#watch(this.#workload);
  }

  /** Serves a workload an earlier host-agent left running: same socket path, same session. */
  async adopt(workload: Workload): Promise<void> {
    await mkdir(this.#socketDir, { recursive: true, mode: 0o711 });
    await this.#socket.start();
    this.#tunnel.start();
    this.#workload = workload;
    this.#watch(workload);
    this.#log.info({ workload: workload.id.slice(0, 12) }, "session re-adopted");
  }

  /** The host channel is back: reconnect the tunnel now. */
  reconnectTunnel(): void {
    this.#tunnel.reconnectNow();
  }

  /** Ends the session here: stops the agent and the workload, closes the socket and tunnel. */
  stop(reason: string): Promise<void> {
    this.#closing ??= (async () => {
      this.#log.info({ reason }, "stopping session");
      await this.#runner.stop(reason, AGENT_STOP_GRACE_MS);
      await this.#workload
        ?.stop(reason)
        .catch((err: Error) => this.#log.warn({ err: err.message }, "workload stop failed"));
      await this.#cleanup();
    })();
    return this.#closing;
  }

  /**
   * Leaves the session running for the next host-agent (the workload survives us): closes the
   * socket and tunnel, keeps the socket directory.
   */
  detach(): Promise<void> {
    this.#closing ??= (async () => {
      this.#tunnel.close();
      await this.#socket.close();
      this.#calls.clear();
    })();
    return this.#closing;
  }

  /** Ends the session from this side (its workload cannot go on), telling the session object why. */
  async end(reason: string): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#log.warn({ reason }, "ending the session on this host");
    await Promise.race([this.#tunnel.end(reason), delay(10_000)]);
    await this.stop(reason);
  }

  #watch(workload: Workload): void {
    void workload.exited.then((exit) => {
      if (this.#closing) return;
      // The runner reports the agent's exit itself before it ends; this is for deaths it could not report.
      const how = exit.exitCode === null ? "unknown" : String(exit.exitCode);
      void this.end(`the session's container ended (exit code ${how})`);
    });
  }

  async #cleanup(): Promise<void> {
    this.#tunnel.failPending({
      ok: false,
      error: { reason: "session_ended", message: "the session ended on this host" },
    });
    // Let those answers reach the container's connections before the socket closes.
    await new Promise((resolve) => setImmediate(resolve));
    this.#tunnel.close();
    await this.#socket.close();
    this.#calls.clear();
    await rm(this.#socketDir, { recursive: true, force: true });
    this.#o.onClosed(this.#o.sessionId);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
