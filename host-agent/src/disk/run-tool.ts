/**
 * Runs one of the system's tools the disk code needs (mkfs.ext4, mount, umount, du, losetup):
 * an argv (never a shell), a timeout, stdout back, a bounded stderr in the error.
 */
import { execFile } from "node:child_process";

const MAX_STDERR = 2_000;

export class ToolError extends Error {
  override readonly name = "ToolError";

  constructor(
    message: string,
    /** What the tool printed before it failed (du prints its total even when a file vanished). */
    readonly stdout: string,
    /** The tool's exit code (null: it did not run, or was killed). */
    readonly exitCode: number | null,
  ) {
    super(message);
  }
}

/** Resolves with the tool's stdout; rejects with a ToolError saying which tool failed and why. */
export function runTool(program: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      program,
      args,
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, shell: false, env: toolEnv() },
      (error, stdout, stderr) => {
        if (!error) return resolve(String(stdout));
        const why =
          (error as NodeJS.ErrnoException).code === "ENOENT"
            ? `${program} is not installed`
            : String(stderr).trim().slice(-MAX_STDERR) || error.message;
        const exitCode = typeof error.code === "number" ? error.code : null;
        reject(new ToolError(`${program} failed: ${why}`, String(stdout), exitCode));
      },
    );
  });
}

/** The tools live in sbin on Debian; a service's PATH may not have it. */
function toolEnv(): Record<string, string> {
  const path = process.env.PATH ?? "";
  const extra = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].filter((dir) => !path.split(":").includes(dir));
  return { PATH: [path, ...extra].filter((p) => p !== "").join(":"), LC_ALL: "C" };
}
