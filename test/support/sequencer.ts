/**
 * The order test files start in. vitest orders a project's files by their last run's durations,
 * which a fresh clone (CI) does not have: then it goes by file size, and a long file can start
 * last and run alone while the other workers idle. The files known to take longest (the slowest
 * files `.ci/run` reports) start first, longest first; the rest keep vitest's order.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** The longest files, longest first (by `.ci/run`'s report); a path not listed keeps its place. */
export const LONGEST_FILES = [
  // docker (three run at once: the agents files, five CLIs each, apart; the soak beside waits)
  "test/e2e/agents.test.ts",
  "test/e2e/resource-limits.test.ts",
  "test/e2e/fault-soak.test.ts",
  "test/e2e/agent-approvals.test.ts",
  "test/e2e/agent-lifetime.test.ts",
  "test/e2e/oauth-signin.test.ts",
  "test/e2e/agent-identity.test.ts",
  "test/e2e/console.test.ts",
  "test/e2e/outage.test.ts",
  "test/e2e/control-plane.test.ts",
  "test/e2e/host-artefact.test.ts",
  "test/e2e/network-gate.test.ts",
  "test/e2e/approvals.test.ts",
  "test/e2e/conformance-2026.test.ts",
  "test/e2e/jobs.test.ts",
  "test/e2e/agent-git-push.test.ts",
  "test/e2e/host-restart.test.ts",
  "test/e2e/host-loss.test.ts",
  "test/e2e/relay-2026.test.ts",
  // integration
  "test/integration/start-cleanup.test.ts",
  "test/integration/runner.test.ts",
  "test/integration/stack-port.test.ts",
  "test/integration/start-dev-vars.test.ts",
  "test/integration/hostile-peers.test.ts",
  // workers
  "test/workers/permission-matrix.test.ts",
];

/** Reorders each project's run of files: the listed ones first, in the list's order. */
export function longestFirst<T>(
  files: readonly T[],
  project: (file: T) => string,
  path: (file: T) => string,
): T[] {
  const rank = (file: T) => {
    const at = LONGEST_FILES.findIndex((listed) => path(file).endsWith(listed));
    return at === -1 ? LONGEST_FILES.length : at;
  };
  const out: T[] = [];
  let run: T[] = [];
  const flush = () => {
    out.push(
      ...run
        .map((file, index) => ({ file, index }))
        .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
        .map((e) => e.file),
    );
    run = [];
  };
  for (const file of files) {
    const last = run.at(-1);
    if (last !== undefined && project(last) !== project(file)) flush();
    run.push(file);
  }
  flush();
  return out;
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    return longestFirst(
      await super.sort(files),
      (spec) => spec.project.name,
      (spec) => spec.moduleId,
    );
  }
}
