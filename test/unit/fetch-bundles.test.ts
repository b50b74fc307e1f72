/** Bundles kept for a container's `git fetch`: read in chunks that fit a socket line, gone once read. */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FetchBundles, MAX_KEPT_BUNDLES } from "../../host-agent/src/git/fetch-bundles.js";
import { GIT_FETCH_CHUNK_BYTES } from "../../protocol/tunnel-git.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("fetched bundles", () => {
  it("are read whole in chunks of at most one line's worth, then removed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oub-fetch-"));
    dirs.push(dir);
    const bundles = new FetchBundles(dir);
    const { id, file } = bundles.path();
    const content = Buffer.alloc(GIT_FETCH_CHUNK_BYTES * 2 + 123, 7);
    content[content.length - 1] = 9;
    writeFileSync(file, content);
    expect(await bundles.keep(id, file)).toBe(content.length);
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const chunk = await bundles.read(id, offset);
      const bytes = Buffer.from(chunk.data, "base64");
      expect(bytes.length).toBeLessThanOrEqual(GIT_FETCH_CHUNK_BYTES);
      parts.push(bytes);
      offset += bytes.length;
      if (chunk.eof) break;
    }
    expect(Buffer.concat(parts).equals(content)).toBe(true);
    expect(parts).toHaveLength(3);
    expect(existsSync(file)).toBe(false);
    await expect(bundles.read(id, 0)).rejects.toMatchObject({ reason: "not_found" });
  });

  it("refuses a new one while too many are unread", async () => {
    const dir = mkdtempSync(join(tmpdir(), "oub-fetch-"));
    dirs.push(dir);
    const bundles = new FetchBundles(dir);
    for (let i = 0; i < MAX_KEPT_BUNDLES; i++) {
      const { id, file } = bundles.path();
      writeFileSync(file, "x");
      await bundles.keep(id, file);
    }
    expect(() => bundles.path()).toThrow(expect.objectContaining({ reason: "busy" }));
  });
});
