/**
 * The agent's home: a fresh directory per session holding the CLI's config files (its MCP server,
 * model endpoint, settings) and its state. Made by the agent's own user, so an isolated session's
 * home is as private as its workspace: with a uid to run as, the runner (which may switch users
 * but not chown) starts a short child as that user to write them.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { LaunchFile } from "../agents/driver.js";

export interface HomePlan {
  home: string;
  files: LaunchFile[];
}

/** Writes the agent's home before it starts (nothing to do for an agent without one). */
export async function prepareHome(
  home: string | undefined,
  files: LaunchFile[],
  uid: number | undefined,
  gid: number | undefined,
): Promise<void> {
  if (home === undefined) return;
  const plan = { home, files };
  if (uid === undefined) writeHome(plan);
  else await writeHomeAs(plan, uid, gid ?? uid);
}

/** Creates the home (mode 0700) and writes the files (mode 0600), in this process. */
export function writeHome(plan: HomePlan): void {
  mkdirSync(plan.home, { recursive: true, mode: 0o700 });
  for (const file of plan.files) {
    mkdirSync(dirname(file.path), { recursive: true, mode: 0o700 });
    writeFileSync(file.path, file.content, { mode: 0o600 });
  }
}

/** The same, as another user: a node child running this file's logic on the plan it reads from stdin. */
export function writeHomeAs(plan: HomePlan, uid: number, gid: number): Promise<void> {
  const program = `
    const { mkdirSync, writeFileSync } = require("node:fs");
    const { dirname } = require("node:path");
    let input = "";
    process.stdin.on("data", (c) => (input += c));
    process.stdin.on("end", () => {
      const plan = JSON.parse(input);
      mkdirSync(plan.home, { recursive: true, mode: 0o700 });
      for (const f of plan.files) {
        mkdirSync(dirname(f.path), { recursive: true, mode: 0o700 });
        writeFileSync(f.path, f.content, { mode: 0o600 });
      }
    });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", program], { uid, gid, stdio: ["pipe", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`could not write the agent's home: ${stderr.trim()}`)),
    );
    child.stdin.end(JSON.stringify(plan));
  });
}
