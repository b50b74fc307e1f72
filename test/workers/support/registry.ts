import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { registryStub } from "./fake-host.js";
import { until } from "./poll.js";

/**
 * Reads the host registry's own tables (placements, missing hosts): what a test cannot see from
 * outside without waiting for the effects it is about.
 */
function query(sql: string, ...bindings: string[]) {
  return runInDurableObject(registryStub(), (_, state) => state.storage.sql.exec(sql, ...bindings).toArray());
}

/** How many sessions are placed on `hostId` (its used capacity). */
export async function placementsOn(hostId: string): Promise<number> {
  return (await query("SELECT session_id FROM placements WHERE host_id = ?", hostId)).length;
}

/** Waits until the registry has noted that `hostId` went away; returns since when (epoch ms). */
export async function hostMissingSince(hostId: string): Promise<number> {
  let since: number | null = null;
  await until(async () => {
    const row = (await query("SELECT since FROM missing_hosts WHERE host_id = ?", hostId))[0];
    since = row ? Number(row.since) : null;
    return since !== null;
  }, `the registry has noted that ${hostId} went away`);
  return since ?? Number.NaN;
}

/**
 * Runs the registry's alarm once one is set (it sets them asynchronously). A real alarm may fire
 * on its own too; both see the same clock, so either does the same work. Returns whether ours ran.
 */
export async function runRegistryAlarm(): Promise<boolean> {
  const registry = registryStub();
  await until(
    async () => (await runInDurableObject(registry, (_, state) => state.storage.getAlarm())) !== null,
    "the host registry has set its alarm",
  );
  return runDurableObjectAlarm(registry);
}
