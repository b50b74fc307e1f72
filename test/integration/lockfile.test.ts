/**
 * The deploy path installs with `npm ci`, which refuses a lockfile that is out of step with
 * package.json (for instance one that lacks a platform's optional package). Checked against the
 * committed files with a dry run, which resolves the whole tree without installing anything.
 */
import { spawnSync } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { repoRoot } from "../../scripts/build.js";

it("npm ci accepts the committed package-lock.json", async () => {
  const dir = await mkdtemp(join(tmpdir(), "oubliette-lock-"));
  try {
    for (const file of ["package.json", "package-lock.json"])
      await copyFile(join(repoRoot, file), join(dir, file));
    const run = spawnSync("npm", ["ci", "--dry-run", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: dir,
      encoding: "utf8",
      timeout: 120_000,
    });
    const missing = `${run.stderr}`.split("\n").filter((line) => /EUSAGE|Missing:|in sync/.test(line));
    expect(missing).toEqual([]);
    expect(run.status).toBe(0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
