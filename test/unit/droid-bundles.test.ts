/**
 * The container-side bundles a built host-agent carries (host-agent/src/bundles/): written under
 * its data directory in a directory named by their content, byte for byte, readable by the
 * sessions' users, once (a second start finds them), and a new build's beside the old one's.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliCompressSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeBundles } from "../../host-agent/src/bundles/droid-bundles.js";
import { parseAgents } from "../../host-agent/src/cli/images-command.js";

const pack = (text: string) => brotliCompressSync(Buffer.from(text)).toString("base64");
const FILES = {
  "container-client.mjs": pack("console.log('runner')\n"),
  "container-client.mjs.map": pack('{"version":3}'),
  "scripted-droid.mjs": pack("console.log('droid')\n"),
};

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "oub-bundles-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("the bundles a built host-agent carries", () => {
  it("are written byte for byte into a directory named by their content, readable by all", async () => {
    const paths = await writeBundles(FILES, root);
    expect(readFileSync(paths.containerClient, "utf8")).toBe("console.log('runner')\n");
    expect(readFileSync(paths.scriptedDroid, "utf8")).toBe("console.log('droid')\n");
    expect(readFileSync(`${paths.containerClient}.map`, "utf8")).toBe('{"version":3}');
    const [dir] = readdirSync(root);
    expect(dir).toMatch(/^[0-9a-f]{16}$/);
    expect(readdirSync(join(root, dir ?? "")).sort()).toEqual(Object.keys(FILES).sort());
    expect(statSync(paths.containerClient).mode & 0o777).toBe(0o644);
  });

  it("are written once: a second start finds them as they are", async () => {
    const first = await writeBundles(FILES, root);
    writeFileSync(first.scriptedDroid, "touched\n");
    const second = await writeBundles(FILES, root);
    expect(second).toEqual(first);
    expect(readFileSync(second.scriptedDroid, "utf8")).toBe("touched\n");
  });

  it("of another build go beside the first, which is left as it was", async () => {
    const old = await writeBundles(FILES, root);
    const next = await writeBundles(
      { ...FILES, "scripted-droid.mjs": pack("console.log('droid 2')\n") },
      root,
    );
    expect(next.scriptedDroid).not.toBe(old.scriptedDroid);
    expect(readFileSync(old.scriptedDroid, "utf8")).toBe("console.log('droid')\n");
    expect(readdirSync(root)).toHaveLength(2);
  });

  it("must hold both programs", async () => {
    const { "scripted-droid.mjs": _, ...partial } = FILES;
    await expect(writeBundles(partial, root)).rejects.toThrow(
      "this host-agent was built without scripted-droid.mjs",
    );
  });
});

describe("images --agents", () => {
  it("names runtimes, all, or none; an unknown name is refused naming the known ones", () => {
    expect(parseAgents("claude, codex")).toEqual(["claude", "codex"]);
    expect(parseAgents("none")).toEqual([]);
    expect(parseAgents("all")).toHaveLength(5);
    expect(() => parseAgents("claude,cobol")).toThrow(/no such runtime: cobol \(known: droid, claude/);
  });
});
