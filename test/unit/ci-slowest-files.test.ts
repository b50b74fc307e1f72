import { describe, expect, it } from "vitest";
import { clock, failedFiles, fileTimes, wholeFileTimes } from "../../scripts/ci/slowest-files.js";

describe("the CI summary", () => {
  it("lists the report's files slowest first, by vitest's own times, relative to the checkout", () => {
    const report = {
      numTotalTests: 3,
      numPassedTests: 3,
      numFailedTests: 0,
      numPendingTests: 0,
      testResults: [
        { name: "/repo/test/unit/a.test.ts", startTime: 1_000, endTime: 1_500, assertionResults: [{}] },
        { name: "/repo/test/e2e/b.test.ts", startTime: 2_000, endTime: 92_000, assertionResults: [{}, {}] },
        // A clock that went backwards counts as nothing, not as a negative time.
        { name: "/repo/test/unit/c.test.ts", startTime: 5_000, endTime: 4_000, assertionResults: [] },
      ],
    };
    expect(fileTimes(report, "/repo")).toEqual([
      { file: "test/e2e/b.test.ts", seconds: 90, tests: 2 },
      { file: "test/unit/a.test.ts", seconds: 0.5, tests: 1 },
      { file: "test/unit/c.test.ts", seconds: 0, tests: 0 },
    ]);
  });

  it("takes each file's whole time from the file-times report when there is one, slowest first", () => {
    const report = {
      numTotalTests: 3,
      numPassedTests: 3,
      numFailedTests: 0,
      numPendingTests: 0,
      testResults: [
        // A file whose beforeAll starts a stack: its tests alone are quick.
        { name: "/repo/test/e2e/b.test.ts", startTime: 2_000, endTime: 3_000, assertionResults: [{}, {}] },
        { name: "/repo/test/unit/a.test.ts", startTime: 1_000, endTime: 6_000, assertionResults: [{}] },
      ],
    };
    const times = {
      files: [
        { file: "test/unit/a.test.ts", project: "unit", seconds: 5.2, state: "passed" },
        { file: "test/e2e/b.test.ts", project: "docker", seconds: 14, state: "passed" },
      ],
    };
    expect(wholeFileTimes(times, report, "/repo")).toEqual([
      { file: "test/e2e/b.test.ts", seconds: 14, tests: 2 },
      { file: "test/unit/a.test.ts", seconds: 5.2, tests: 1 },
    ]);
  });

  it("names the files that failed, a file whose hook failed among them, with the first line of why", () => {
    const report = {
      numTotalTests: 2,
      numPassedTests: 1,
      numFailedTests: 0,
      numPendingTests: 1,
      testResults: [
        {
          name: "/repo/test/workers/m.test.ts",
          startTime: 0,
          endTime: 1,
          status: "failed",
          message: "\nError: initialize failed: 401\n    at stack",
          assertionResults: [{}],
        },
        {
          name: "/repo/test/unit/a.test.ts",
          startTime: 0,
          endTime: 1,
          status: "passed",
          assertionResults: [{}],
        },
      ],
    };
    expect(failedFiles(report, "/repo")).toEqual(["test/workers/m.test.ts: Error: initialize failed: 401"]);
  });

  it("says times as minutes and seconds", () => {
    expect(clock(0)).toBe("0:00");
    expect(clock(59.6)).toBe("1:00");
    expect(clock(1_234)).toBe("20:34");
  });
});
