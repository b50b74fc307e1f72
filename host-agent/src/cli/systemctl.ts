/**
 * Starting the service `service --now` wrote: `systemctl daemon-reload`, then `systemctl enable
 * --now <unit>` (started now and at every boot). Run as programs with argument arrays, never
 * through a shell.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CliError } from "./errors.js";

const run = promisify(execFile);

async function systemctl(args: string[]): Promise<void> {
  try {
    await run("systemctl", args, { timeout: 60_000 });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    if (failure.code === "ENOENT")
      throw new CliError(
        "systemd_unavailable",
        "systemctl is not on this machine: start the host-agent another way (host-agent start, or its container image)",
      );
    throw new CliError(
      "systemd_unavailable",
      `systemctl ${args.join(" ")} failed: ${(failure.stderr ?? failure.message).trim().slice(-500)}`,
    );
  }
}

/** Reloads systemd's units and enables and starts `unit`. */
export async function enableNow(unit: string): Promise<void> {
  await systemctl(["daemon-reload"]);
  await systemctl(["enable", "--now", unit]);
}
