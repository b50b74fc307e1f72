/**
 * What keys the Worker's prepared bundle (scripts/stack/worker-bundle.ts): every input file's path
 * and content, and nothing that is an output or an install.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workerInputFiles, workerInputsHash } from "../../scripts/stack/worker-bundle.js";

let root: string;

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "worker-inputs-"));
  await put("wrangler.toml", 'name = "w"\n');
  await put("package-lock.json", "{}");
  await put("worker/src/index.ts", "export default {};\n");
  await put("worker/console/client/main.ts", "// console\n");
  await put("protocol/events.ts", "export {};\n");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("the Worker bundle's inputs", () => {
  it("are the sources, the console's, wrangler.toml and the lockfile; not outputs, installs or other parts", async () => {
    await put("worker/console/dist/console/app.js", "built");
    await put("worker/node_modules/x/index.js", "installed");
    await put("host-agent/src/main.ts", "not the Worker");
    expect(await workerInputFiles(root)).toEqual([
      "package-lock.json",
      "protocol/events.ts",
      "worker/console/client/main.ts",
      "worker/src/index.ts",
      "wrangler.toml",
    ]);
  });

  it("hash differently when a source changes, is added or is renamed, and alike otherwise", async () => {
    const first = await workerInputsHash(root);
    expect(await workerInputsHash(root)).toBe(first);

    await put("worker/console/dist/console/app.js", "built");
    await put("host-agent/src/main.ts", "not the Worker");
    expect(await workerInputsHash(root)).toBe(first);

    await put("worker/src/index.ts", "export default { fetch() {} };\n");
    const changed = await workerInputsHash(root);
    expect(changed).not.toBe(first);

    await put("protocol/more.ts", "export {};\n");
    const added = await workerInputsHash(root);
    expect(added).not.toBe(changed);

    await rm(join(root, "protocol/more.ts"));
    await put("protocol/other.ts", "export {};\n");
    expect(await workerInputsHash(root)).not.toBe(added);

    await put("package-lock.json", '{"lockfileVersion":3}');
    expect(await workerInputsHash(root)).not.toBe(added);
  });
});
