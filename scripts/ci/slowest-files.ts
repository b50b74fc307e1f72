/**
 * The end of a CI run, said plainly: the files that failed (a file whose hook failed counts, though
 * its tests are only skipped), the ten slowest test files and the whole run's time, so the next
 * change that slows CI is seen at once. `.ci/run` calls it after `npm test`, whatever that
 * returned. A file's time is its whole time (import, setup, tests and hooks) from
 * test/support/file-times-reporter.ts when that was written, else vitest's JSON report's (first
 * test to last, hooks left out).
 *
 *   node --import tsx scripts/ci/slowest-files.ts <report.json> <seconds the run took> [file-times.json]
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { z } from "zod";
import { type FileTimesFile, FileTimesFileSchema } from "./file-times.js";

/** The part of vitest's JSON report read here. */
const ReportSchema = z.object({
  numTotalTests: z.number(),
  numPassedTests: z.number(),
  numFailedTests: z.number(),
  numPendingTests: z.number(),
  numTodoTests: z.number().optional(),
  testResults: z.array(
    z.object({
      name: z.string(),
      startTime: z.number(),
      endTime: z.number(),
      status: z.string().optional(),
      message: z.string().optional(),
      assertionResults: z.array(z.unknown()),
    }),
  ),
});

export interface FileTime {
  file: string;
  seconds: number;
  tests: number;
}

/** The report's files, slowest first. */
export function fileTimes(report: z.infer<typeof ReportSchema>, root: string): FileTime[] {
  return report.testResults
    .map((r) => ({
      file: relative(root, r.name),
      seconds: Math.max(0, r.endTime - r.startTime) / 1000,
      tests: r.assertionResults.length,
    }))
    .sort((a, b) => b.seconds - a.seconds);
}

/** The files of a file-times report, slowest first (their test counts from vitest's report). */
export function wholeFileTimes(
  times: FileTimesFile,
  report: z.infer<typeof ReportSchema>,
  root: string,
): FileTime[] {
  const tests = new Map(report.testResults.map((r) => [relative(root, r.name), r.assertionResults.length]));
  return times.files
    .map((f) => ({ file: f.file, seconds: f.seconds, tests: tests.get(f.file) ?? 0 }))
    .sort((a, b) => b.seconds - a.seconds);
}

/** The files that failed, with the first line of why (a failed hook leaves only skipped tests). */
export function failedFiles(report: z.infer<typeof ReportSchema>, root: string): string[] {
  return report.testResults
    .filter((r) => r.status === "failed")
    .map((r) => {
      const why = r.message?.split("\n").find((line) => line.trim() !== "");
      return `${relative(root, r.name)}${why ? `: ${why.trim().slice(0, 200)}` : ""}`;
    });
}

/** Seconds as `m:ss`. */
export function clock(seconds: number): string {
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function readJson(path: string | undefined): unknown {
  if (path === undefined) return null;
  try {
    return jsonOrNull(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

function main(): void {
  const [reportPath, secondsText, timesPath] = process.argv.slice(2);
  const seconds = Number(secondsText);
  const out: string[] = ["", "── CI summary ──"];
  const parsed = ReportSchema.safeParse(readJson(reportPath));
  const times = FileTimesFileSchema.safeParse(readJson(timesPath));
  if (parsed.success) {
    const report = parsed.data;
    const files = times.success
      ? wholeFileTimes(times.data, report, process.cwd())
      : fileTimes(report, process.cwd());
    out.push(
      `${report.testResults.length} files, ${report.numTotalTests} tests: ${report.numPassedTests} passed, ` +
        `${report.numFailedTests} failed, ${report.numPendingTests + (report.numTodoTests ?? 0)} skipped`,
    );
    const failed = failedFiles(report, process.cwd());
    if (failed.length > 0) out.push(`${failed.length} files failed:`, ...failed.map((f) => `  ${f}`));
    out.push(
      times.success
        ? "the ten slowest files (each one's whole time: import, setup, tests and hooks):"
        : "the ten slowest files (first test to last, hooks left out):",
    );
    for (const f of files.slice(0, 10))
      out.push(`  ${f.seconds.toFixed(1).padStart(7)} s  ${f.file} (${f.tests} tests)`);
  } else {
    out.push("no test report was written (the run stopped before the tests, or vitest failed to start)");
  }
  if (Number.isFinite(seconds)) out.push(`the whole run: ${clock(seconds)} (${Math.round(seconds)} s)`);
  process.stdout.write(`${out.join("\n")}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
