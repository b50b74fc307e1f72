import { describe, expect, it } from "vitest";
import { LONGEST_FILES, longestFirst } from "../support/sequencer.js";

interface Spec {
  project: string;
  path: string;
}
const spec = (project: string, path: string): Spec => ({ project, path: `/repo/${path}` });
const order = (files: Spec[]) =>
  longestFirst(
    files,
    (f) => f.project,
    (f) => f.path,
  ).map((f) => f.path.replace("/repo/", ""));

describe("the test sequencer", () => {
  it("starts a project's longest files first, in the list's order, the others after in their order", () => {
    expect(
      order([
        spec("docker", "test/e2e/relay.test.ts"),
        spec("docker", "test/e2e/agent-approvals.test.ts"),
        spec("docker", "test/e2e/jobs.test.ts"),
        spec("docker", "test/e2e/agents.test.ts"),
      ]),
    ).toEqual([
      "test/e2e/agents.test.ts",
      "test/e2e/agent-approvals.test.ts",
      "test/e2e/jobs.test.ts",
      "test/e2e/relay.test.ts",
    ]);
  });

  it("never moves a file out of its project's run", () => {
    expect(
      order([
        spec("integration", "test/integration/a.test.ts"),
        spec("integration", "test/integration/start-cleanup.test.ts"),
        spec("docker", "test/e2e/b.test.ts"),
        spec("docker", "test/e2e/fault-soak.test.ts"),
      ]),
    ).toEqual([
      "test/integration/start-cleanup.test.ts",
      "test/integration/a.test.ts",
      "test/e2e/fault-soak.test.ts",
      "test/e2e/b.test.ts",
    ]);
  });

  it("lists files that exist", async () => {
    const { existsSync } = await import("node:fs");
    expect(LONGEST_FILES.filter((path) => !existsSync(path))).toEqual([]);
  });
});
