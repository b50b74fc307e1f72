/**
 * The agent's home: a private directory per session holding the CLI's config files (its MCP
 * server, model endpoint, settings) and its state. Made by the agent's own user, so it stays as
 * private as its uid: the runner (which may switch users but not read others' files) starts a
 * short child as that user to write the files and, before a relaunch, keep copies of the files a
 * CLI would overwrite as it starts (`LaunchKeep`).
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { LaunchFile, LaunchKeep } from "../agents/driver.js";

export interface HomePlan {
  home: string;
  files: LaunchFile[];
  keep: LaunchKeep[];
  /** Paths inside the home removed first (see AgentLaunch.clear). */
  clear?: string[];
}

/** Writes the agent's home before it starts. */
export async function prepareHome(
  home: string,
  files: LaunchFile[],
  keep: LaunchKeep[],
  uid: number | undefined,
  gid: number | undefined,
  clear: string[] = [],
): Promise<void> {
  const plan = { home, files, keep, clear };
  if (uid === undefined) writeHome(plan);
  else await writeHomeAs(plan, uid, gid ?? uid);
}

/**
 * Creates the home (mode 0700), removes what `clear` names (only inside the home), writes the
 * files (mode 0600) and makes the copies, in this process. Kept self-contained (no imports but node:fs and node:path, passed in): the same source
 * runs in the child that acts as the agent's user.
 */
export function writeHome(
  plan: HomePlan,
  fs = { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync },
  path = { dirname, join },
): void {
  fs.mkdirSync(plan.home, { recursive: true, mode: 0o700 });
  for (const doomed of plan.clear ?? []) {
    if (!doomed.startsWith(`${plan.home}/`) || doomed.split("/").includes(".."))
      throw new Error(`${doomed} is not inside the agent's home`);
    fs.rmSync(doomed, { recursive: true, force: true });
  }
  for (const file of plan.files) {
    fs.mkdirSync(path.dirname(file.path), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file.path, file.content, { mode: 0o600 });
  }
  for (const rule of plan.keep) {
    const [before, after] = rule.dir.split("/*/");
    const dirs =
      after === undefined
        ? [rule.dir]
        : (fs.existsSync(before as string) ? fs.readdirSync(before as string) : []).map((d: string) =>
            path.join(before as string, d, after),
          );
    const pattern = new RegExp(rule.pattern);
    for (const dir of dirs) {
      if (!fs.existsSync(dir)) continue;
      for (const name of fs.readdirSync(dir)) {
        if (!pattern.test(name)) continue;
        const copy = path.join(dir, name.replace(pattern, rule.rename));
        if (!fs.existsSync(copy)) fs.copyFileSync(path.join(dir, name), copy);
      }
    }
  }
}

/** The same, as another user: a node child running `writeHome` on the plan it reads from stdin. */
export function writeHomeAs(plan: HomePlan, uid: number, gid: number): Promise<void> {
  const program = `
    const fs = require("node:fs");
    const path = require("node:path");
    const writeHome = ${writeHome.toString()};
    let input = "";
    process.stdin.on("data", (c) => (input += c));
    process.stdin.on("end", () => writeHome(JSON.parse(input), fs, path));`;
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
    // A child that died before reading its plan says so by its exit code; its EPIPE must not
    // end the runner (and every session in the container with it).
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(plan));
  });
}
