/**
 * The Worker's prepared bundle (scripts/stack/worker-bundle.ts), made by the real wrangler: its
 * inputs cover every source the bundle holds, it is made once per content of them, and servers
 * preparing at once share one.
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../scripts/build.js";
import { prepareWorker, workerInputFiles } from "../../scripts/stack/worker-bundle.js";

const config = join(repoRoot, "wrangler.toml");
let cacheDir: string;

beforeAll(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "worker-bundle-"));
});

afterAll(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

describe("the prepared Worker", () => {
  it("is made by two servers at once into one bundle, which holds no source outside its inputs", async () => {
    const [first, second] = await Promise.all([
      prepareWorker(config, cacheDir),
      prepareWorker(config, cacheDir),
    ]);
    expect(second.dir).toBe(first.dir);
    // Nothing half-made is left beside it.
    expect(await readdir(cacheDir)).toEqual([first.dir.split("/").pop()]);
    expect(first.name).toBe("oubliette-edge");
    expect(first.vars).toHaveProperty("OUBLIETTE_CALLER_TIMEOUT_MS");
    expect(first.workerOptions).toHaveProperty("durableObjects.SESSIONS.className", "SessionDurableObject");

    const map = JSON.parse(await readFile(join(first.dir, "index.js.map"), "utf8")) as { sources: string[] };
    const ours = map.sources
      .filter((source) => !source.includes("node_modules/"))
      .map((source) => join(first.dir, source).slice(repoRoot.length));
    expect(ours.length).toBeGreaterThan(100);
    const inputs = new Set(await workerInputFiles(repoRoot));
    expect(ours.filter((source) => !inputs.has(source))).toEqual([]);
  });

  it("is taken from the cache while its inputs are unchanged, not bundled again", async () => {
    const before = await prepareWorker(config, cacheDir);
    const built = (await stat(join(before.dir, "index.js"))).mtimeMs;
    const again = await prepareWorker(config, cacheDir);
    expect(again.dir).toBe(before.dir);
    expect((await stat(join(again.dir, "index.js"))).mtimeMs).toBe(built);
  });
});
