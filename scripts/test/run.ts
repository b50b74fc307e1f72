/**
 * `npm test`: the static checks (`npm run check`: typecheck and lint) and vitest, at once — the
 * checks take a core for most of a minute, which the first test projects, mostly waiting on
 * other processes, leave free. vitest's output is shown as it comes; the checks' output is shown
 * when they end, at once if they fail. The run fails if either failed. Arguments go to vitest.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

interface Outcome {
  code: number;
  output: string;
  seconds: number;
}

function finished(child: ChildProcess, startedAt: number, output: () => string): Promise<Outcome> {
  return new Promise((resolve) => {
    child.once("error", (err) =>
      resolve({ code: 1, output: `${output()}${err.message}\n`, seconds: (Date.now() - startedAt) / 1000 }),
    );
    child.once("close", (code, signal) =>
      resolve({ code: code ?? (signal ? 1 : 0), output: output(), seconds: (Date.now() - startedAt) / 1000 }),
    );
  });
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  let checkOutput = "";
  const check = spawn("npm", ["run", "--silent", "check"], { stdio: ["ignore", "pipe", "pipe"] });
  check.stdout?.on("data", (chunk: Buffer) => {
    checkOutput += chunk.toString("utf8");
  });
  check.stderr?.on("data", (chunk: Buffer) => {
    checkOutput += chunk.toString("utf8");
  });
  const manifest = createRequire(import.meta.url).resolve("vitest/package.json");
  const vitestCli = join(dirname(manifest), "vitest.mjs");
  const vitest = spawn(process.execPath, [vitestCli, "run", ...process.argv.slice(2)], { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      check.kill(signal);
      vitest.kill(signal);
    });
  const checked = finished(check, startedAt, () => checkOutput).then((outcome) => {
    if (outcome.code !== 0)
      process.stderr.write(`\n── npm run check FAILED (the tests go on) ──\n${outcome.output}\n`);
    return outcome;
  });
  const [checks, tests] = await Promise.all([checked, finished(vitest, startedAt, () => "")]);
  process.stderr.write(
    checks.code === 0
      ? `npm run check: passed (typecheck and lint, ${checks.seconds.toFixed(0)} s, beside the tests)\n`
      : `npm run check: FAILED (its output is above)\n`,
  );
  return checks.code !== 0 ? checks.code : tests.code;
}

process.exitCode = await main();
