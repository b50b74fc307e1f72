/**
 * `container exec` under the process runtime (development only): the argv runs as a child of the
 * host-agent, without a shell, in the project's workspace directory (a container path under
 * /workspace is mapped onto it), in its own process group so a timeout (or a cancel) kills all of it.
 */
import { spawn } from "node:child_process";
import { isAbsolute, join, relative } from "node:path";
import type { ContainerExecParams, ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import { DEFAULT_EXEC_CWD } from "./docker-exec.js";
import { fitOutput, OutputCollector } from "./output-budget.js";
import type { StdoutSink } from "./types.js";

/** The host directory a container path under /workspace stands for; HostError("invalid") otherwise. */
export function mapWorkspacePath(containerPath: string, workspacesDir: string): string {
  const rel = relative(DEFAULT_EXEC_CWD, containerPath);
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw new HostError("invalid", `cwd must be under ${DEFAULT_EXEC_CWD} under the process runtime`);
  }
  return join(workspacesDir, rel);
}

/** Runs the command; never rejects for the command's own failure. */
export async function processExec(
  params: ContainerExecParams,
  workspacesDir: string,
  env: Record<string, string>,
  signal?: AbortSignal,
  stdout?: StdoutSink,
  seen?: (stream: "stdout" | "stderr", chunk: Buffer) => void,
): Promise<ContainerExecResult> {
  const startedAt = Date.now();
  const cwd = mapWorkspacePath(params.cwd ?? DEFAULT_EXEC_CWD, workspacesDir);
  const [program, ...args] = params.command;
  if (program === undefined) throw new HostError("invalid", "command is empty");
  const collected = new OutputCollector(params.output_limit_bytes);
  const child = spawn(program, args, {
    cwd,
    env,
    shell: false,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk: Buffer) => {
    seen?.("stdout", chunk);
    if (stdout) stdout(chunk);
    else collected.push("stdout", chunk);
  });
  child.stderr.on("data", (chunk: Buffer) => {
    seen?.("stderr", chunk);
    collected.push("stderr", chunk);
  });
  const kill = () => {
    try {
      process.kill(-(child.pid ?? 0), "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, params.timeout_ms);
  signal?.addEventListener("abort", kill, { once: true });
  if (signal?.aborted) kill();
  const exit = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once("error", (error) => resolve({ code: null, error }));
    child.once("close", (code) => resolve({ code }));
  });
  clearTimeout(timer);
  signal?.removeEventListener("abort", kill);
  if (exit.error) throw new HostError("exec_failed", `could not run ${program}: ${exit.error.message}`);
  const durationMs = Date.now() - startedAt;
  const { answer, cut } = fitOutput(collected.text("stdout"), collected.text("stderr"), (stdout, stderr) => ({
    exit_code: timedOut ? null : exit.code,
    stdout,
    stderr,
    truncated: false,
    timed_out: timedOut,
    duration_ms: durationMs,
  }));
  answer.truncated = cut || collected.truncated;
  return answer;
}
