/**
 * The fault soak, bounded (about two minutes): relayed calls from several sessions while the
 * host-agent is killed (SIGKILL) and stopped (SIGTERM) and restarted, its network is cut and the
 * Worker is restarted. Every droid call must end answered or with a clear error; the caller and
 * the droid agree on every call; nothing lost, nothing duplicated. `npm run soak` runs it longer.
 */
import { expect, it } from "vitest";
import { dockerContext } from "../support/docker-context.js";
import { runFaultSoak } from "../support/fault-soak.js";

it("keeps every promise through host-agent kills, network cuts and a Worker restart", async () => {
  const tally = await runFaultSoak({
    runtime: "docker",
    image: dockerContext().droidImage,
    sessions: 3,
    durationMs: 75_000,
    faults: ["host_sigkill", "cut", "host_sigterm", "worker_restart"],
    log: (line) => process.stderr.write(`[soak] ${line}\n`),
  });
  process.stderr.write(`[soak] ${JSON.stringify(tally)}\n`);
  expect(tally.examples).toEqual([]);
  expect(tally).toMatchObject({ lost: 0, duplicated: 0, disagreements: 0 });
  expect(tally.calls).toBeGreaterThan(500);
  // Every kind of fault happened at least once while the droids were calling.
  for (const fault of ["host_sigkill", "cut", "host_sigterm", "worker_restart"]) {
    expect(tally.faults[fault], fault).toBeGreaterThanOrEqual(1);
  }
}, 420_000);
