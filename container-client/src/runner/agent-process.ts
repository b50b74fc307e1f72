/**
 * The agent, as the runner runs it: a child process driven through its adapter (the driver).
 * Droid messages become the driver's lines on stdin (each seq written at most once); every stdout
 * line goes through the driver, which turns it into common events and, where the protocol asks
 * for it (a handshake step, a permission request), lines to write back; each stderr line is a
 * `droid_log`. Both streams are always read, so a chatty agent never blocks on a full pipe.
 * Stopping goes in steps: stdin end, SIGTERM, SIGKILL, to the agent's whole process group.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import type { Logger } from "../../../lib/log.js";
import type { AgentEventBody } from "../../../protocol/agent-events.js";
import { Limits } from "../../../protocol/limits.js";
import { LineSplitter } from "../../../protocol/line-splitter.js";
import type { AgentDriver, PermissionAsk } from "../agents/driver.js";
import { fitEvent } from "./fit-event.js";

/** stderr lines are cut to this many characters. */
const MAX_LOG_LINE_CHARS = 8 * 1024;

export interface AgentExit {
  exitCode: number | null;
  signal: string | null;
}

export interface AgentProcessOptions {
  argv: string[];
  driver: AgentDriver;
  env: Record<string, string>;
  /** Working directory (the session's workspace). */
  cwd?: string;
  /** Identity to run as (workspace isolation); the runner needs CAP_SETUID/SETGID for it. */
  uid?: number;
  gid?: number;
  logger: Logger;
  onEvent(event: AgentEventBody): void;
  /** The agent asks permission (this process waits for `answer`'s lines). */
  onAsks?(asks: PermissionAsk[], agent: AgentProcess): void;
  /** The agent took questions back (asks it made earlier). */
  onWithdrawn?(asks: PermissionAsk[], agent: AgentProcess): void;
  /** The last droid message an earlier process of this agent was given (a restart goes on from it). */
  deliveredSeq?: number;
}

export class AgentProcess {
  readonly pid: number;
  readonly exited: Promise<AgentExit>;
  readonly #child: ChildProcess;
  readonly #log: Logger;
  readonly #driver: AgentDriver;
  #deliveredSeq = 0;
  #stopping: Promise<AgentExit> | undefined;

  private constructor(child: ChildProcess, exited: Promise<AgentExit>, options: AgentProcessOptions) {
    this.#child = child;
    this.pid = child.pid ?? 0;
    this.exited = exited;
    this.#log = options.logger.child({ agent_pid: this.pid });
    this.#driver = options.driver;
    this.#deliveredSeq = options.deliveredSeq ?? 0;
    child.stdin?.on("error", (err) => this.#log.debug({ err: err.message }, "agent stdin closed"));
    if (child.stdout) {
      readLines(child.stdout, Limits.agentLineBytes, (line) => {
        if (typeof line !== "string")
          return options.onEvent(dropped("stdout", line.oversized, Limits.agentLineBytes));
        let read: ReturnType<AgentDriver["read"]>;
        try {
          read = this.#driver.read(line);
        } catch (err) {
          // A line the adapter cannot make sense of is shown, never fatal.
          this.#log.warn({ err: (err as Error).message }, "the adapter failed on a line");
          read = { events: [{ type: "droid_output", text: line }], write: [] };
        }
        for (const event of read.events) options.onEvent(fitEvent(event));
        void this.#write(read.write).catch((err: Error) =>
          this.#log.debug({ err: err.message }, "could not write to the agent"),
        );
        if (read.asks !== undefined && read.asks.length > 0) {
          if (options.onAsks) options.onAsks(read.asks, this);
          else this.#log.warn({ asks: read.asks.length }, "the agent asked permission; nobody to ask");
        }
        if (read.withdrawn !== undefined && read.withdrawn.length > 0)
          options.onWithdrawn?.(read.withdrawn, this);
      });
    }
    if (child.stderr)
      readLines(child.stderr, Limits.outputEventBytes, (line) => options.onEvent(logEvent(line)));
    // The handshake may meet an agent that died at once (killed as it started): a closed stdin
    // then, never an unhandled rejection, which would end the runner and every session with it.
    void this.#write(this.#driver.start()).catch((err: Error) =>
      this.#log.debug({ err: err.message }, "could not write the handshake to the agent"),
    );
  }

  /** Spawns the agent; rejects when it cannot be run. */
  static start(options: AgentProcessOptions): Promise<AgentProcess> {
    const [program, ...args] = options.argv;
    if (program === undefined) return Promise.reject(new Error("no agent command"));
    // Its own process group, so stopping reaches the agent's children (its MCP server) too.
    const child = spawn(program, args, {
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.uid !== undefined ? { uid: options.uid } : {}),
      ...(options.gid !== undefined ? { gid: options.gid } : {}),
    });
    const exited = new Promise<AgentExit>((resolve) => {
      child.once("exit", (exitCode, signal) => resolve({ exitCode, signal }));
    });
    return new Promise((resolve, reject) => {
      child.once("error", (err) => reject(new Error(`could not run ${program}: ${err.message}`)));
      child.once("spawn", () => {
        child.on("error", (err) => options.logger.warn({ err: err.message }, "agent process error"));
        resolve(new AgentProcess(child, exited, options));
      });
    });
  }

  get deliveredSeq(): number {
    return this.#deliveredSeq;
  }

  /** The driver of this process (it knows the CLI's conversation id, to resume it). */
  get driver(): AgentDriver {
    return this.#driver;
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Sends droid message `seq` through the driver unless it was already sent; resolves once written. */
  async deliver(seq: number, text: string): Promise<void> {
    if (seq <= this.#deliveredSeq) return;
    if (!this.running || !this.#child.stdin || this.#child.stdin.destroyed)
      throw new Error("the agent is not running");
    this.#deliveredSeq = seq;
    await this.#write(this.#driver.send(seq, text));
  }

  /** Interrupts the turn in flight (the session stays). */
  async interrupt(): Promise<void> {
    if (!this.running) throw new Error("the agent is not running");
    await this.#write(this.#driver.interrupt());
  }

  /** Writes the answer to one of its permission questions; false when the agent no longer runs. */
  async answer(lines: readonly string[]): Promise<boolean> {
    if (!this.running || !this.#child.stdin || this.#child.stdin.destroyed) return false;
    await this.#write(lines);
    return true;
  }

  /** Writes lines to the agent's stdin in order; resolves once they are flushed. */
  #write(lines: readonly string[]): Promise<void> {
    const stdin = this.#child.stdin;
    if (lines.length === 0 || !stdin || stdin.destroyed) return Promise.resolve();
    const text = lines.map((line) => `${line}\n`).join("");
    return new Promise<void>((resolve, reject) =>
      stdin.write(text, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** Ends the agent in steps; resolves with how it ended. Idempotent. */
  stop(graceMs: number): Promise<AgentExit> {
    this.#stopping ??= (async () => {
      if (!this.running) return this.exited;
      this.#child.stdin?.end();
      const term = setTimeout(() => this.#signal("SIGTERM"), graceMs / 2);
      const kill = setTimeout(() => this.#signal("SIGKILL"), graceMs);
      try {
        return await this.exited;
      } finally {
        clearTimeout(term);
        clearTimeout(kill);
      }
    })();
    return this.#stopping;
  }

  /** Kills whatever is left of the agent's process group (once the agent itself is gone). */
  killGroup(): void {
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      // nothing left
    }
  }

  #signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      this.#child.kill(signal);
    }
  }
}

function readLines(
  stream: Readable,
  limit: number,
  onLine: (line: string | { oversized: number }) => void,
): void {
  const splitter = new LineSplitter(limit);
  const emit = (events: ReturnType<LineSplitter["push"]>) => {
    for (const e of events) onLine(e.kind === "line" ? e.text : { oversized: e.bytes });
  };
  stream.on("data", (chunk: Buffer) => emit(splitter.push(chunk)));
  stream.on("end", () => emit(splitter.end()));
}

export function logEvent(line: string | { oversized: number }): AgentEventBody {
  if (typeof line !== "string") return dropped("stderr", line.oversized, Limits.outputEventBytes);
  const text = line.length > MAX_LOG_LINE_CHARS ? `${line.slice(0, MAX_LOG_LINE_CHARS)}…` : line;
  return { type: "droid_log", text };
}

function dropped(stream: string, bytes: number, limit: number): AgentEventBody {
  return {
    type: "droid_log",
    text: `[oubliette] dropped a ${bytes}-byte ${stream} line (limit ${limit} bytes)`,
  };
}
