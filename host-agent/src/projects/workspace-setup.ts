/**
 * A workspace's setup on this host: the project's setup steps, run in the workspace as the exec
 * identity (files group-writable, so the workspace's agents may change them), one step after
 * another within the setup's timeout, each connection through the egress gate under the setup
 * network policy (its own proxy credential while it runs). Output is reported as it comes, cut
 * into events, and the last part of each step's output is kept in the answer. The outcome is
 * remembered per workspace with a hash of the steps, so
 * - a session's start runs the setup only when these steps have not succeeded here yet;
 * - after a failure, new sessions of the workspace are refused with its reason, until the setup
 *   succeeds (run again on demand, or with other steps).
 * One setup runs at a time per workspace.
 */
import { createHash } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import {
  MAX_SETUP_OUTPUT_CHUNK,
  type SetupEvent,
  type SetupResult,
  type SetupSpec,
  stepArgv,
  stepText,
} from "../../../protocol/setup.js";
import type { ProjectNetwork } from "../egress/project-network.js";
import type { ContainerCommands } from "./container-commands.js";
import { HostError } from "./errors.js";
import type { RecordStore } from "./record-store.js";

/** How much of each step's output the answer keeps (its end: where errors are). */
const KEPT_OUTPUT = 16 * 1024;
/** Output is reported at least this often while a step prints (and at once past a chunk). */
const OUTPUT_FLUSH_MS = 200;

export interface WorkspaceSetupOptions {
  commands: ContainerCommands;
  network: ProjectNetwork;
  record: RecordStore;
  logger: Logger;
}

export class WorkspaceSetup {
  readonly #o: WorkspaceSetupOptions;
  readonly #running = new Map<string, Promise<void>>();

  constructor(options: WorkspaceSetupOptions) {
    this.#o = options;
  }

  /**
   * Before a session's agent starts: runs the setup unless these steps already succeeded in the
   * workspace here; throws `setup_failed` when they failed here (then nothing runs).
   */
  async beforeSession(
    workspaceId: string,
    spec: SetupSpec,
    emit: (event: SetupEvent) => void,
  ): Promise<void> {
    const result = await this.#queue(workspaceId, async () => {
      await this.refuseFailed(workspaceId, spec);
      const known = (await this.#o.record.read()).setups?.[workspaceId];
      return known?.hash === hashOf(spec) && known.status === "ok"
        ? null
        : this.#run(workspaceId, spec, emit);
    });
    if (result?.status === "failed")
      throw new HostError("setup_failed", `the workspace's setup failed: ${result.message}`);
  }

  /** Throws `setup_failed` when these steps failed in the workspace here (a new session is refused with why). */
  async refuseFailed(workspaceId: string, spec: SetupSpec): Promise<void> {
    const known = (await this.#o.record.read()).setups?.[workspaceId];
    if (known?.hash === hashOf(spec) && known.status === "failed")
      throw new HostError(
        "setup_failed",
        `the workspace's setup failed (${known.message}); run workspace setup again once it is fixed`,
      );
  }

  /** Runs the setup now, whatever ran before (after a setup of the workspace already running). */
  run(
    workspaceId: string,
    spec: SetupSpec,
    emit: (event: SetupEvent) => void = () => {},
  ): Promise<SetupResult> {
    return this.#queue(workspaceId, () => this.#run(workspaceId, spec, emit));
  }

  /** Runs `work` after whatever runs for the workspace now. */
  #queue<T>(workspaceId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#running.get(workspaceId) ?? Promise.resolve();
    const next = before.catch(() => null).then(work);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.#running.set(workspaceId, settled);
    void settled.then(() => {
      if (this.#running.get(workspaceId) === settled) this.#running.delete(workspaceId);
    });
    return next;
  }

  async #run(workspaceId: string, spec: SetupSpec, emit: (event: SetupEvent) => void): Promise<SetupResult> {
    const log = this.#o.logger.child({ workspace: workspaceId });
    const startedAt = Date.now();
    const deadline = startedAt + spec.timeout_ms;
    const commands = spec.steps.map(stepText);
    emit({ type: "setup_started", workspace_id: workspaceId, steps: commands });
    log.info({ steps: commands.length }, "workspace setup started");
    const run = this.#o.network.setupRun();
    const steps: SetupResult["steps"] = [];
    let failure: { step: number; exitCode: number | null; message: string } | null = null;
    try {
      for (const [index, step] of spec.steps.entries()) {
        const left = deadline - Date.now();
        if (left <= 0) {
          failure = {
            step: index,
            exitCode: null,
            message: `step ${index + 1} (${commands[index]}) did not start: the setup ran out of time`,
          };
          break;
        }
        const output = new StepOutput((stream, text) =>
          emit({ type: "setup_output", workspace_id: workspaceId, step: index, stream, text }),
        );
        const stepStarted = Date.now();
        // Files the setup makes are the workspace group's to change (agents are other uids of it).
        const argv = ["/bin/sh", "-c", 'umask 002 && exec "$@"', "setup", ...stepArgv(step)];
        const result = await this.#o.commands.setupStep(workspaceId, argv, {
          credential: run.token,
          timeoutMs: left,
          output: (stream, chunk) => output.push(stream, chunk),
        });
        output.flush();
        steps.push({
          command: commands[index] ?? "",
          exit_code: result.exit_code,
          timed_out: result.timed_out,
          duration_ms: Date.now() - stepStarted,
          output: output.kept(),
        });
        if (result.exit_code !== 0) {
          const how = result.timed_out
            ? "ran out of time"
            : result.exit_code === null
              ? "was killed"
              : `exited with code ${result.exit_code}`;
          failure = {
            step: index,
            exitCode: result.exit_code,
            message: `step ${index + 1} (${commands[index]}) ${how}`,
          };
          break;
        }
      }
    } finally {
      run.done();
    }
    const durationMs = Date.now() - startedAt;
    const message = failure?.message ?? `${steps.length} step(s) done`;
    await this.#o.record.update((record) => {
      record.setups = {
        ...record.setups,
        [workspaceId]: {
          hash: hashOf(spec),
          status: failure ? "failed" : "ok",
          message,
          at: new Date().toISOString(),
        },
      };
    });
    emit({
      type: "setup_finished",
      workspace_id: workspaceId,
      status: failure ? "failed" : "ok",
      ...(failure
        ? {
            step: failure.step,
            command: (commands[failure.step] ?? "").slice(0, 16_384),
            exit_code: failure.exitCode,
          }
        : {}),
      duration_ms: durationMs,
      message,
    });
    log.info({ status: failure ? "failed" : "ok", duration_ms: durationMs }, "workspace setup finished");
    return { status: failure ? "failed" : "ok", message, duration_ms: durationMs, steps };
  }
}

/** What a set of steps is, for knowing whether they already ran. */
function hashOf(spec: SetupSpec): string {
  return createHash("sha256").update(JSON.stringify(spec.steps)).digest("hex");
}

/**
 * One step's output: reported in chunks (at most MAX_SETUP_OUTPUT_CHUNK characters, at least
 * every OUTPUT_FLUSH_MS while it prints), and its last KEPT_OUTPUT characters kept.
 */
class StepOutput {
  readonly #report: (stream: "stdout" | "stderr", text: string) => void;
  readonly #pending = { stdout: "", stderr: "" };
  #kept = "";
  #timer: NodeJS.Timeout | null = null;

  constructor(report: (stream: "stdout" | "stderr", text: string) => void) {
    this.#report = report;
  }

  push(stream: "stdout" | "stderr", chunk: Buffer): void {
    const text = chunk.toString("utf8");
    this.#kept = (this.#kept + text).slice(-KEPT_OUTPUT);
    this.#pending[stream] += text;
    if (this.#pending[stream].length >= MAX_SETUP_OUTPUT_CHUNK) this.#send(stream);
    this.#timer ??= setTimeout(() => this.flush(), OUTPUT_FLUSH_MS);
  }

  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#send("stdout");
    this.#send("stderr");
  }

  kept(): string {
    return this.#kept;
  }

  #send(stream: "stdout" | "stderr"): void {
    let text = this.#pending[stream];
    this.#pending[stream] = "";
    while (text.length > 0) {
      this.#report(stream, text.slice(0, MAX_SETUP_OUTPUT_CHUNK));
      text = text.slice(MAX_SETUP_OUTPUT_CHUNK);
    }
  }
}
