/**
 * `npm run soak`: the fault soak of `npm test`, run longer (SOAK_SECONDS, default 300). Droids in
 * several sessions make caller tool calls non-stop while the host-agent is killed (SIGKILL),
 * stopped (SIGTERM) and restarted, its network is cut and the Worker restarted; then every call
 * is matched against what the caller saw. Prints the tally: calls, answered, errors by reason,
 * lost, duplicated, disagreements. Needs a Docker Engine (sessions survive a host-agent restart
 * only in containers); everything runs on loopback and every loop is bounded.
 */

import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { buildAll } from "../scripts/build.js";
import { ensureDockerEngine } from "../scripts/docker/engine.js";
import { runFaultSoak } from "../test/support/fault-soak.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 300);
const sessions = Number(process.env.SOAK_SESSIONS ?? 4);
if (!Number.isInteger(seconds) || seconds < 30 || seconds > 3_600) {
  process.stderr.write("soak: SOAK_SECONDS must be a whole number from 30 to 3600\n");
  process.exit(2);
}
const say = (line: string) => process.stdout.write(`${line}\n`);

const limit = setTimeout(
  () => {
    process.stderr.write("soak: gave up (time limit)\n");
    process.exit(2);
  },
  (seconds + 600) * 1000,
);
limit.unref();

const bundles = await buildAll();
const engine = await ensureDockerEngine({ install: false }).catch((err: Error) => {
  process.stderr.write(`soak: needs a Docker Engine (${err.message.split("\n")[0]})\n`);
  process.exit(1);
});
try {
  const image = await ensureDroidImage(engine.docker, bundles, () => {});
  say(`soak: ${sessions} sessions for ${seconds} s with host-agent kills, network cuts and Worker restarts`);
  const startedAt = Date.now();
  const tally = await runFaultSoak({
    runtime: "docker",
    image,
    sessions,
    durationMs: seconds * 1000,
    faults: ["host_sigkill", "cut", "host_sigterm", "worker_restart", "host_sigkill", "cut"],
    log: (line) => say(`soak: ${line}`),
  });
  const errors = Object.entries(tally.errors)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(", ");
  const faults = Object.entries(tally.faults)
    .map(([fault, n]) => `${fault} ${n}`)
    .join(", ");
  say("");
  say(`faults injected:  ${faults}`);
  say(`calls:            ${tally.calls} in ${Math.round((Date.now() - startedAt) / 1000)} s`);
  say(`answered:         ${tally.answered}`);
  say(`errors:           ${tally.calls - tally.answered}${errors ? ` (${errors})` : ""}`);
  say(`lost:             ${tally.lost}`);
  say(`duplicated:       ${tally.duplicated}`);
  say(`disagreements:    ${tally.disagreements}`);
  for (const example of tally.examples) say(`  e.g. ${example}`);
  if (tally.lost + tally.duplicated + tally.disagreements > 0) process.exitCode = 1;
} finally {
  await engine.stop();
}
