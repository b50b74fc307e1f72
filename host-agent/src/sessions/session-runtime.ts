import { randomBytes } from "node:crypto";
import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../../lib/log.js";
import { AgentEnv } from "../../../protocol/socket.js";
import type { AgentStdinMessage, SessionSpec } from "../../../protocol/tunnel.js";
import type { AgentProcess, AgentRuntime } from "../runtime/types.js";
import { RelaySocketServer } from "../socket/index.js";
import type { TunnelTiming } from "../tunnel/reconnecting-socket.js";
import { SessionTunnel } from "../tunnel/session-tunnel.js";
import { readAgentOutput } from "./agent-output.js";

export interface SessionRuntimeOptions {
  sessionId: string;
  spec: SessionSpec;
  workerUrl: string;
  hostToken: string;
  hostId: string;
  runtime: AgentRuntime;
  socketRoot: string;
  maxLineBytes: number;
  logger: Logger;
  /** Called once, after the session has been cleaned up on this host. */
  onClosed(sessionId: string): void;
  timing?: TunnelTiming;
}

/**
 * One session on this host: its socket directory and relay socket (for the droid's
 * container-client), its tunnel to the session's Durable Object, and the agent process.
 * Droid messages go to the agent's stdin as JSON lines; its output comes back as events.
 */
export class SessionRuntime {
  readonly #o: SessionRuntimeOptions;
  readonly #log: Logger;
  readonly #socketDir: string;
  readonly #tunnel: SessionTunnel;
  readonly #relay: RelaySocketServer;
  /** Secret handed to the agent; `hello` on the socket must present it. */
  readonly #sessionToken = randomBytes(32).toString("hex");
  #agent: AgentProcess | null = null;
  /** Messages that arrived before the agent was up. */
  #early: AgentStdinMessage[] = [];
  #closing: Promise<void> | null = null;

  constructor(options: SessionRuntimeOptions) {
    this.#o = options;
    this.#log = options.logger.child({ session: options.sessionId });
    this.#socketDir = join(options.socketRoot, options.sessionId);
    this.#tunnel = new SessionTunnel({
      workerUrl: options.workerUrl,
      hostToken: options.hostToken,
      hostId: options.hostId,
      sessionId: options.sessionId,
      logger: this.#log,
      timing: options.timing,
      onConfig: (config) => this.#relay.setCallerToolsConfig(config),
      onDroidMessage: (seq, text) => this.#deliver({ type: "message", seq, text }),
      onGone: (reason) => void this.stop(reason),
    });
    this.#relay = new RelaySocketServer({
      path: join(this.#socketDir, "relay.sock"),
      sessionId: options.sessionId,
      sessionToken: this.#sessionToken,
      maxLineBytes: options.maxLineBytes,
      logger: this.#log,
      handlers: { callerTool: (call) => this.#tunnel.callerTool(call.tool, call.arguments) },
    });
  }

  get sessionId(): string {
    return this.#o.sessionId;
  }

  /** The tunnel of this session (tests cut it to check resumption). */
  get tunnel(): SessionTunnel {
    return this.#tunnel;
  }

  /** Creates the socket, connects the tunnel and launches the agent; throws if the launch fails. */
  async start(): Promise<void> {
    // Reachable by the container's non-root user (uid 1000); the socket itself is 0666.
    await mkdir(this.#socketDir, { recursive: true, mode: 0o711 });
    await chmod(this.#socketDir, 0o711);
    await this.#relay.start();
    this.#tunnel.start();
    this.#tunnel.event({ type: "droid_status", status: "starting" });
    try {
      this.#agent = await this.#o.runtime.launch({
        sessionId: this.#o.sessionId,
        socketDir: this.#socketDir,
        image: this.#o.spec.image,
        env: {
          ...this.#o.spec.env,
          [AgentEnv.sessionToken]: this.#sessionToken,
          [AgentEnv.sessionId]: this.#o.sessionId,
        },
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#tunnel.event({ type: "droid_status", status: "failed", message });
      await this.#cleanup(message);
      throw err;
    }
    const agent = this.#agent;
    this.#log.info({ agent: agent.id, runtime: this.#o.runtime.kind }, "agent started");
    readAgentOutput(agent.stdout, agent.stderr, (event) => this.#tunnel.event(event));
    agent.stdin.on("error", (err) => this.#log.warn({ err: err.message }, "agent stdin closed"));
    this.#tunnel.event({ type: "droid_status", status: "running" });
    for (const m of this.#early) this.#write(m);
    this.#early = [];
    void agent.exited.then((exit) => {
      if (this.#closing) return;
      this.#tunnel.event({ type: "droid_status", status: "exited", exit_code: exit.exitCode });
      void this.stop(`the agent exited with code ${exit.exitCode}`);
    });
  }

  /** Stops the agent, flushes events, closes the socket and tunnel, removes the socket directory. */
  stop(reason: string): Promise<void> {
    this.#closing ??= this.#cleanup(reason);
    return this.#closing;
  }

  async #cleanup(reason: string): Promise<void> {
    this.#log.info({ reason }, "stopping session");
    await this.#agent
      ?.stop(reason)
      .catch((err: Error) => this.#log.warn({ err: err.message }, "agent stop failed"));
    this.#tunnel.failPending({
      ok: false,
      error: { reason: "session_ended", message: `session ended: ${reason}` },
    });
    await this.#tunnel.drained(5_000);
    this.#tunnel.close();
    await this.#relay.close();
    await rm(this.#socketDir, { recursive: true, force: true });
    this.#o.onClosed(this.#o.sessionId);
  }

  #deliver(message: AgentStdinMessage): void {
    if (this.#agent) this.#write(message);
    else this.#early.push(message);
  }

  #write(message: AgentStdinMessage): void {
    this.#agent?.stdin.write(`${JSON.stringify(message)}\n`);
  }
}
