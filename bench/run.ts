/**
 * `npm run bench [-- <bench>...]`: runs the benchmarks named (default: all, in this order), each
 * in a process of its own, one after another. Run alone, `relay` keeps its long session short
 * (10,000 calls, unless BENCH_LONG_SESSION_CALLS says otherwise) so the relay figures take about a
 * minute; the full run keeps 100,000.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Command } from "commander";

const BENCHES = ["model-proxy", "agents", "relay", "console", "egress"] as const;
type Bench = (typeof BENCHES)[number];

const SHORT_LONG_SESSION_CALLS = "10000";

const program = new Command("bench")
  .description(
    "Measure the model path, agent start-up, the caller tool relay, the console and the egress gate on loopback.",
  )
  .argument("[benches...]", `which to run: ${BENCHES.join(", ")} (default: all)`)
  .action((names: string[]) => {
    const unknown = names.filter((n) => !(BENCHES as readonly string[]).includes(n));
    if (unknown.length > 0)
      program.error(`unknown bench: ${unknown.join(", ")} (choose from ${BENCHES.join(", ")})`);
    const chosen = names.length === 0 ? [...BENCHES] : (names as Bench[]);
    const env = { ...process.env };
    if (names.length > 0 && env.BENCH_LONG_SESSION_CALLS === undefined) {
      env.BENCH_LONG_SESSION_CALLS = SHORT_LONG_SESSION_CALLS;
    }
    for (const bench of chosen) {
      const file = fileURLToPath(new URL(`./${bench}.ts`, import.meta.url));
      const run = spawnSync(process.execPath, ["--import", "tsx", file], { stdio: "inherit", env });
      if (run.status !== 0) {
        process.stderr.write(`bench: ${bench} failed (exit ${run.status ?? run.signal})\n`);
        process.exit(run.status ?? 1);
      }
    }
  });

program.parse();
