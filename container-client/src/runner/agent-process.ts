/**
 * The agent, as the runner runs it: a child process whose stdin takes droid messages (one JSON
 * line each, written at most once per seq) and whose output becomes events (each stdout line a
 * `droid_output`, JSON in `data` or else `text`; each stderr line a `droid_log`). Both streams are
 * always read, so a chatty agent never blocks on a full pipe. Stopping goes in steps: stdin end,
 * SIGTERM, SIGKILL, to the agent's whole process group.
 */

import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import type { AgentEventBody, AgentStdinMessage } from "../../../protocol/agent-events.js";
import { parseJson } from "../../../protocol/json.js";
import { checkSize, Limits } from "../../../protocol/limits.js";
import { LineSplitter } from "../../../protocol/line-splitter.js";

/** stderr lines are cut to this many characters. */
const MAX_LOG_LINE_CHARS = 8 * 1024;

export interface AgentExit {
  exitCode: number | null;
  signal: string | null;
}

export interface AgentProcessOptions {
  command: string[];
  env: Record<string, string>;
  /** Working directory (the session's workspace). */
  cwd?: string;
  /** Identity to run as (workspace isolation); the runner needs CAP_SETUID/SETGID for it. */
  uid?: number;
  gid?: number;
  logger: Logger;
  onEvent(event: AgentEventBody): void;
}

export class AgentProcess {
  readonly pid: number;
  readonly exited: Promise<AgentExit>;
  readonly #child: ChildProcess;
  readonly #log: Logger;
  #deliveredSeq = 0;
  #stopping: Promise<AgentExit> | undefined;

  private constructor(child: ChildProcess, exited: Promise<AgentExit>, options: AgentProcessOptions) {
    this.#child = child;
    this.pid = child.pid ?? 0;
    this.exited = exited;
    this.#log = options.logger.child({ agent_pid: this.pid });
    child.stdin?.on("error", (err) => this.#log.debug({ err: err.message }, "agent stdin closed"));
    if (child.stdout) readLines(child.stdout, (line) => options.onEvent(outputEvent(line)));
    if (child.stderr) readLines(child.stderr, (line) => options.onEvent(logEvent(line)));
  }

  /** Spawns the agent; rejects when it cannot be run. */
  static start(options: AgentProcessOptions): Promise<AgentProcess> {
    const [program, ...args] = options.command;
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

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Writes a droid message unless its seq was already written; resolves once it is flushed. */
  async deliver(message: AgentStdinMessage): Promise<void> {
    if (message.seq <= this.#deliveredSeq) return;
    const stdin = this.#child.stdin;
    if (!stdin || stdin.destroyed || !this.running) throw new Error("the agent is not running");
    this.#deliveredSeq = message.seq;
    await new Promise<void>((resolve, reject) =>
      stdin.write(`${JSON.stringify(message)}\n`, (err) => (err ? reject(err) : resolve())),
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

  #signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      this.#child.kill(signal);
    }
  }
}

function readLines(stream: Readable, onLine: (line: string | { oversized: number }) => void): void {
  const splitter = new LineSplitter(Limits.outputEventBytes);
  const emit = (events: ReturnType<LineSplitter["push"]>) => {
    for (const e of events) onLine(e.kind === "line" ? e.text : { oversized: e.bytes });
  };
  stream.on("data", (chunk: Buffer) => emit(splitter.push(chunk)));
  stream.on("end", () => emit(splitter.end()));
}

/** One stdout line as an event; a line that would be over the event budget is reported, not relayed. */
export function outputEvent(line: string | { oversized: number }): AgentEventBody {
  if (typeof line !== "string") return dropped("stdout", line.oversized);
  const json = parseJson(line);
  // An agent speaking the runner's line protocol says when it finished a message's turn.
  const turn = json.ok ? TurnCompletedLineSchema.safeParse(json.value) : null;
  if (turn?.success) return turn.data;
  const event: AgentEventBody = json.ok
    ? { type: "droid_output", data: json.value as never }
    : { type: "droid_output", text: line };
  return checkSize("output_event", event) ? dropped("stdout", line.length) : event;
}

/** The stdout line `{"type":"turn_completed","message_seq":n}`: the turn of message n is over. */
const TurnCompletedLineSchema = z
  .object({ type: z.literal("turn_completed"), message_seq: z.number().int().positive().optional() })
  .strict();

export function logEvent(line: string | { oversized: number }): AgentEventBody {
  if (typeof line !== "string") return dropped("stderr", line.oversized);
  const text = line.length > MAX_LOG_LINE_CHARS ? `${line.slice(0, MAX_LOG_LINE_CHARS)}…` : line;
  return { type: "droid_log", text };
}

function dropped(stream: string, bytes: number): AgentEventBody {
  return {
    type: "droid_log",
    text: `[oubliette] dropped a ${bytes}-byte ${stream} line (limit ${Limits.outputEventBytes} bytes encoded)`,
  };
}
