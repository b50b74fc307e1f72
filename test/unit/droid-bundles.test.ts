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
import { bundlesId, writeBundles } from "../../host-agent/src/bundles/droid-bundles.js";
import type { EmbeddedBundles } from "../../host-agent/src/bundles/embedded-bundles.js";
import { parseAgents } from "../../host-agent/src/cli/images-command.js";

const pack = (text: string) => brotliCompressSync(Buffer.from(text)).toString("base64");
const FILES = {
  "container-client.mjs": pack("console.log('runner')\n"),
  "container-client.mjs.map": pack('{"version":3}'),
  "scripted-droid.mjs": pack("console.log('droid')\n"),
};

/** Files as the build embeds them; counts how often their strings were made. */
function embed(files: Record<string, string>) {
  const made = { count: 0 };
  const embedded: EmbeddedBundles = {
    id: bundlesId(files),
    names: Object.keys(files),
    files: async () => {
      made.count += 1;
      return files;
    },
  };
  return { embedded, made };
}

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "oub-bundles-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("the bundles a built host-agent carries", () => {
  it("are written byte for byte into a directory named by their content, readable by all", async () => {
    const paths = await writeBundles(embed(FILES).embedded, root);
    expect(readFileSync(paths.containerClient, "utf8")).toBe("console.log('runner')\n");
    expect(readFileSync(paths.scriptedDroid, "utf8")).toBe("console.log('droid')\n");
    expect(readFileSync(`${paths.containerClient}.map`, "utf8")).toBe('{"version":3}');
    const [dir] = readdirSync(root);
    expect(dir).toMatch(/^[0-9a-f]{16}$/);
    expect(readdirSync(join(root, dir ?? "")).sort()).toEqual(Object.keys(FILES).sort());
    expect(statSync(paths.containerClient).mode & 0o777).toBe(0o644);
  });

  it("are written once: a second start finds them as they are, without making their strings", async () => {
    const { embedded, made } = embed(FILES);
    const first = await writeBundles(embedded, root);
    expect(made.count).toBe(1);
    writeFileSync(first.scriptedDroid, "touched\n");
    const second = await writeBundles(embedded, root);
    expect(second).toEqual(first);
    expect(readFileSync(second.scriptedDroid, "utf8")).toBe("touched\n");
    expect(made.count).toBe(1);
  });

  it("of another build go beside the first, which is left as it was", async () => {
    const old = await writeBundles(embed(FILES).embedded, root);
    const next = await writeBundles(
      embed({ ...FILES, "scripted-droid.mjs": pack("console.log('droid 2')\n") }).embedded,
      root,
    );
    expect(next.scriptedDroid).not.toBe(old.scriptedDroid);
    expect(readFileSync(old.scriptedDroid, "utf8")).toBe("console.log('droid')\n");
    expect(readdirSync(root)).toHaveLength(2);
  });

  it("must hold both programs", async () => {
    const { "scripted-droid.mjs": _, ...partial } = FILES;
    await expect(writeBundles(embed(partial).embedded, root)).rejects.toThrow(
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
