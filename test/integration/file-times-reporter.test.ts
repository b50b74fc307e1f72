/**
 * The CI summary's file times (test/support/file-times-reporter.ts) count a file's hooks: vitest
 * itself runs a file whose beforeAll takes 0.6 s and whose test takes none.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startVitest } from "vitest/node";
import { FileTimesFileSchema } from "../../scripts/ci/file-times.js";
import FileTimesReporter from "../support/file-times-reporter.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "file-times-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("writes each file's whole time, its beforeAll included", async () => {
  const output = join(dir, "times.json");
  const previous = process.env.OUBLIETTE_FILE_TIMES;
  process.env.OUBLIETTE_FILE_TIMES = output;
  try {
    const vitest = await startVitest("test", ["test/fixtures/file-times/slow-hook.test.ts"], {
      watch: false,
      config: false,
      include: ["test/fixtures/file-times/*.test.ts"],
      reporters: [new FileTimesReporter()],
    });
    await vitest.close();
  } finally {
    if (previous === undefined) delete process.env.OUBLIETTE_FILE_TIMES;
    else process.env.OUBLIETTE_FILE_TIMES = previous;
  }
  const times = FileTimesFileSchema.parse(JSON.parse(await readFile(output, "utf8")));
  expect(times.files).toHaveLength(1);
  expect(times.files[0]).toMatchObject({
    file: "test/fixtures/file-times/slow-hook.test.ts",
    state: "passed",
  });
  expect(times.files[0]?.seconds).toBeGreaterThanOrEqual(0.6);
});
