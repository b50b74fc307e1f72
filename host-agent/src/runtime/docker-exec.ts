/**
 * `container exec` through the Engine's exec API: the argv goes to the engine as an array (no
 * shell anywhere), stdout and stderr come back demultiplexed and capped. On timeout, or when the
 * Worker cancels the request, the exec'd process and its descendants are killed, found through
 * the host's /proc (the engine has no "kill exec" call): by the host-agent when it may signal
 * them, else by a `node` exec in the container that signals their in-container pids.
 */
import { readFile } from "node:fs/promises";
import { Writable } from "node:stream";
import type Dockerode from "dockerode";
import type { Logger } from "../../../lib/log.js";
import { CONTAINER_GIT_ENV } from "../../../protocol/container-layout.js";
import { AgentEnv } from "../../../protocol/socket.js";
import type { ContainerExecParams, ContainerExecResult } from "../../../protocol/tunnel-projects.js";
import { HostError } from "../projects/errors.js";
import { dockerStatusCode, errorMessage } from "./errors.js";
import { fitOutput, OutputCollector } from "./output-budget.js";
import type { ExecOptions } from "./types.js";

/** Where a command runs when the caller names no directory. */
export const DEFAULT_EXEC_CWD = "/workspace";
/** How long a killed exec's stream may take to end before it is cut. */
const KILL_GRACE_MS = 5_000;
/** Most processes of one exec's tree that are signalled. */
const MAX_TREE = 1_024;

const SIGNAL_SCRIPT =
  "for (const p of process.argv.slice(1)) { try { process.kill(Number(p), 'SIGKILL'); } catch {} }";

/** Runs `params.command` in the container; never rejects for the command's own failure. */
export async function dockerExec(
  docker: Dockerode,
  container: Dockerode.Container,
  params: ContainerExecParams,
  logger: Logger,
  options: Pick<ExecOptions, "signal" | "stdout" | "env" | "output"> = {},
): Promise<ContainerExecResult> {
  const { signal, stdout } = options;
  const startedAt = Date.now();
  let exec: Dockerode.Exec;
  try {
    exec = await container.exec({
      Cmd: params.command,
      WorkingDir: params.cwd ?? DEFAULT_EXEC_CWD,
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      // A user's command has no business with the runner's secret (it is in the container's env),
      // and works in repositories the sessions made (other uids of the workspace's group).
      Env: [
        `${AgentEnv.runnerToken}=`,
        ...Object.entries({ ...options.env, ...CONTAINER_GIT_ENV }).map(([k, v]) => `${k}=${v}`),
      ],
    });
  } catch (error) {
    throw execError(error);
  }
  const output = new OutputCollector(params.output_limit_bytes);
  const sink = (stream: "stdout" | "stderr") =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        options.output?.(stream, chunk);
        if (stream === "stdout" && stdout) stdout(chunk);
        else output.push(stream, chunk);
        done();
      },
    });
  let stream: NodeJS.ReadWriteStream;
  try {
    stream = (await exec.start({ hijack: true, stdin: false })) as NodeJS.ReadWriteStream;
  } catch (error) {
    throw execError(error);
  }
  docker.modem.demuxStream(stream, sink("stdout"), sink("stderr"));
  const ended = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", () => resolve());
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void killExecTree(container, exec, logger);
  }, params.timeout_ms);
  let cancelled = false;
  const cancel = () => {
    cancelled = true;
    void killExecTree(container, exec, logger);
  };
  signal?.addEventListener("abort", cancel, { once: true });
  if (signal?.aborted) cancel();
  try {
    await ended;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", cancel);
  }
  if (timedOut || cancelled) {
    // The kill normally ends the stream at once; a stream that lingers is cut.
    await Promise.race([ended, new Promise((r) => setTimeout(r, KILL_GRACE_MS).unref())]);
    (stream as unknown as { destroy?(): void }).destroy?.();
  }
  let exitCode: number | null = null;
  if (!timedOut && !cancelled) {
    const info = await exec.inspect().catch(() => null);
    exitCode = info?.ExitCode ?? null;
  }
  const durationMs = Date.now() - startedAt;
  const { answer, cut } = fitOutput(output.text("stdout"), output.text("stderr"), (stdout, stderr) => ({
    exit_code: exitCode,
    stdout,
    stderr,
    truncated: false,
    timed_out: timedOut,
    duration_ms: durationMs,
  }));
  answer.truncated = cut || output.truncated;
  return answer;
}

function execError(error: unknown): HostError {
  const status = dockerStatusCode(error);
  if (status === 409) return new HostError("not_running", "the project's container is not running");
  if (status === 404) return new HostError("not_found", "the project's container does not exist");
  return new HostError("exec_failed", `the engine refused the exec: ${errorMessage(error)}`, {
    cause: error,
  });
}

async function killExecTree(
  container: Dockerode.Container,
  exec: Dockerode.Exec,
  logger: Logger,
): Promise<void> {
  const info = await exec.inspect().catch(() => null);
  const root = info?.Pid;
  if (!root || info?.Running === false) return;
  const tree = await processTree(root);
  let denied = false;
  // Children first, so none is re-parented and missed while we go.
  for (const pid of [...tree].reverse()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EPERM") denied = true;
    }
  }
  if (!denied) return;
  // Not allowed from here (a non-root host-agent): signal them from inside, by their pids there.
  const inner = (await Promise.all(tree.map(namespacePid))).filter((p): p is number => p !== null);
  logger.info({ processes: inner.length }, "killing a timed-out exec from inside its container");
  try {
    const killer = await container.exec({ Cmd: ["node", "-e", SIGNAL_SCRIPT, ...inner.map(String)] });
    await killer.start({ Detach: true });
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, "could not kill a timed-out exec");
  }
}

/** `root` and its descendants (host pids), parents before children, bounded. */
async function processTree(root: number): Promise<number[]> {
  const tree = [root];
  for (let i = 0; i < tree.length && tree.length < MAX_TREE; i += 1) {
    const pid = tree[i] as number;
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
    for (const child of children.split(/\s+/)) {
      const n = Number(child);
      if (Number.isInteger(n) && n > 0 && tree.length < MAX_TREE) tree.push(n);
    }
  }
  return tree;
}

/** A host pid's pid inside its container (the last field of NSpid). */
async function namespacePid(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const line = status.split("\n").find((l) => l.startsWith("NSpid:"));
  const last = line?.trim().split(/\s+/).at(-1);
  const n = Number(last);
  return Number.isInteger(n) && n > 0 ? n : null;
}
