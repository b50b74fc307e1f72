/**
 * Runs apt-get without a shell, non-interactively, streaming its output as progress lines so a
 * user watching `npm test` on a bare machine sees why it is slow.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { DockerUnavailableError } from "../../host-agent/src/images/errors.js";

const KEPT_LINES = 30;

/** Runs `apt-get <args>`; throws DockerUnavailableError("apt_failed") with the output's tail on failure. */
export async function runApt(args: string[], log: (line: string) => void): Promise<void> {
  log(`apt-get ${args.join(" ")}`);
  const child = spawn("apt-get", args, {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const recent: string[] = [];
  const keep = (line: string) => {
    recent.push(line);
    if (recent.length > KEPT_LINES) recent.shift();
  };
  createInterface({ input: child.stdout }).on("line", (line) => {
    keep(line);
    log(`  apt: ${line}`);
  });
  createInterface({ input: child.stderr }).on("line", (line) => {
    keep(line);
    log(`  apt: ${line}`);
  });
  const result = await new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once("error", (error) => resolve({ code: null, error }));
    child.once("close", (code) => resolve({ code }));
  });
  if (result.code !== 0) {
    const why = result.error ? result.error.message : `exit code ${result.code}`;
    throw new DockerUnavailableError(
      "apt_failed",
      `apt-get ${args.join(" ")} failed (${why}). Last output:\n${recent.join("\n")}`,
    );
  }
}
