/**
 * The runner kit as a host writes it, run where nothing else is: a root directory holding the kit
 * at /.oubliette and no libc, no shell, no /lib at all (what a musl or distroless image looks like
 * to a glibc program), entered with chroot. The kit's Node, setpriv and git remote helper run there
 * on the kit's own loader and libraries. (The bundles are stand-ins that print what they were run
 * with: the kit only carries them.)
 */
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readElfFile } from "../../host-agent/src/kit/elf.js";
import { ensureRunnerKit, type RunnerKit } from "../../host-agent/src/kit/runner-kit.js";
import { KitPaths } from "../../protocol/container-layout.js";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "runner-kit-"));
const root = join(dir, "root");
let kit: RunnerKit;

/** Runs `argv` chrooted into `root` (as root on this machine; in a user namespace otherwise). */
async function inRoot(argv: string[]): Promise<{ stdout: string; stderr: string }> {
  const chroot = ["chroot", root, ...argv];
  const command = process.getuid?.() === 0 ? chroot : ["unshare", "--map-root-user", ...chroot];
  // Nothing of this machine's environment goes in but where chroot itself is.
  return run(command[0] as string, command.slice(1), {
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    timeout: 30_000,
  });
}

beforeAll(async () => {
  const bundles = {
    containerClient: join(dir, "container-client.mjs"),
    scriptedDroid: join(dir, "scripted-droid.mjs"),
  };
  writeFileSync(bundles.containerClient, "console.log(JSON.stringify(process.argv.slice(2)));\n");
  writeFileSync(bundles.scriptedDroid, "console.log('scripted');\n");
  kit = await ensureRunnerKit({ dir: join(dir, "kits"), bundles });
  mkdirSync(root);
  cpSync(kit.hostDir, join(root, KitPaths.root), { recursive: true });
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the runner kit", () => {
  it("holds the loader, the libraries and the programs, each program naming the kit's loader", () => {
    const names = readdirSync(kit.hostDir).sort();
    expect(names).toEqual(
      expect.arrayContaining(["bin", "container-client.mjs", "ld.so", "lib______", "scripted-droid.mjs"]),
    );
    expect(readdirSync(join(kit.hostDir, "lib______"))).toEqual(expect.arrayContaining(["libc.so.6"]));
    for (const program of ["node", "setpriv"])
      expect(readElfFile(join(kit.hostDir, "bin", program)).interp?.path).toBe(KitPaths.loader);
    // Readable and runnable by an agent's uid; written by root alone.
    expect(statSync(join(kit.hostDir, "bin", "node")).mode & 0o777).toBe(0o755);
    expect(statSync(join(kit.hostDir, "container-client.mjs")).mode & 0o777).toBe(0o644);
  });

  it("is written once: the same inputs give the same kit, untouched", async () => {
    const before = statSync(join(kit.hostDir, "bin", "node")).mtimeMs;
    const bundles = {
      containerClient: join(dir, "container-client.mjs"),
      scriptedDroid: join(dir, "scripted-droid.mjs"),
    };
    const again = await ensureRunnerKit({ dir: join(dir, "kits"), bundles });
    expect(again).toEqual(kit);
    expect(statSync(join(kit.hostDir, "bin", "node")).mtimeMs).toBe(before);
    expect(readdirSync(join(dir, "kits"))).toEqual([kit.id]);
  });

  it("runs its Node where there is no libc, no shell and no /lib, as itself", async () => {
    expect(readdirSync(root)).toEqual([".oubliette"]);
    const { stdout } = await inRoot([
      KitPaths.node,
      "-e",
      "console.log(process.execPath, process.versions.node, require('node:child_process').execFileSync(process.execPath, ['-p', '6*7']).toString().trim())",
    ]);
    expect(stdout.trim()).toBe(`${KitPaths.node} ${process.versions.node} 42`);
  });

  it("runs its setpriv there too, and git's remote helper starts the container-client in its mode", async () => {
    const setpriv = await inRoot([KitPaths.setpriv, "--version"]);
    expect(setpriv.stdout).toMatch(/setpriv from util-linux/);
    const helper = await inRoot([
      join(KitPaths.bin, "git-remote-oubliette"),
      "origin",
      "oubliette::https://x/y.git",
    ]);
    expect(JSON.parse(helper.stdout)).toEqual(["git-remote", "origin", "oubliette::https://x/y.git"]);
  });
});
