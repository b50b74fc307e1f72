/**
 * A vitest reporter writing each test file's whole time — importing it, its setup files, every
 * test and every hook (a file's beforeAll starting a stack is often most of it) — to the JSON file
 * named by OUBLIETTE_FILE_TIMES (default `.oubliette/file-times.json`). vitest's JSON report
 * times a file from its first test's start to its last test's end, hooks left out, so the files
 * whose setup is slow looked fast; scripts/ci/slowest-files.ts reads this instead.
 *
 *   vitest run --reporter=default --reporter=./test/support/file-times-reporter.ts
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Reporter, TestModule } from "vitest/node";
import type { FileTimesFile } from "../../scripts/ci/file-times.js";

export default class FileTimesReporter implements Reporter {
  readonly #path = resolve(process.env.OUBLIETTE_FILE_TIMES ?? ".oubliette/file-times.json");
  readonly #files: FileTimesFile["files"] = [];

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    this.#files.push({
      file: module.relativeModuleId,
      project: module.project.name,
      seconds: (d.collectDuration + d.setupDuration + d.prepareDuration + d.duration) / 1000,
      state: module.state(),
    });
  }

  onTestRunEnd(): void {
    mkdirSync(dirname(this.#path), { recursive: true });
    const out: FileTimesFile = { files: this.#files };
    writeFileSync(this.#path, `${JSON.stringify(out, null, 1)}\n`);
  }
}
