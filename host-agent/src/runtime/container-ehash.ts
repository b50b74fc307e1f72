/**
 * Each project container's network namespace gets a TCP connection hash of its own: the runner
 * learns who made each proxy connection from the kernel's socket table (/proc/net/tcp), and the
 * kernel writes that table by walking the namespace's connection hash, which by default is the
 * host's whole table (hundreds of thousands of buckets: ~5 ms a read, on every connection). Linux
 * (6.1 and later) gives namespaces created after `net.ipv4.tcp_child_ehash_entries` is set a hash
 * of that size. A root host-agent of the Docker runtime sets it when it is unset (0), at start;
 * `--container-ehash-entries 0` leaves the kernel's setting alone. Namespaces created later on
 * this host (other containers' too) get the same size: a host that runs Oubliette's containers.
 */
import { readFile, writeFile } from "node:fs/promises";
import type { Logger } from "../../../lib/log.js";

const SYSCTL = "/proc/sys/net/ipv4/tcp_child_ehash_entries";

/** What was done: set to a size, left as the kernel had it (and why). */
export type EhashOutcome = { set: number } | { left: string };

export async function ensureContainerEhash(entries: number, logger: Logger): Promise<EhashOutcome> {
  const outcome = await apply(entries);
  if ("set" in outcome)
    logger.info(
      { tcp_child_ehash_entries: outcome.set },
      "containers get a TCP connection hash of their own",
    );
  else logger.info({ reason: outcome.left }, "containers share the host's TCP connection hash");
  return outcome;
}

async function apply(entries: number): Promise<EhashOutcome> {
  if (entries === 0) return { left: "--container-ehash-entries is 0" };
  const current = await readFile(SYSCTL, "utf8").catch(() => null);
  if (current === null)
    return { left: "this kernel has no per-namespace connection hash (Linux 6.1 and later)" };
  const value = Number(current.trim());
  if (value !== 0) return { left: `already set to ${value}` };
  if (process.getuid?.() !== 0) return { left: "the host-agent is not root" };
  try {
    await writeFile(SYSCTL, String(entries));
  } catch (err) {
    return { left: `could not be set: ${err instanceof Error ? err.message : String(err)}` };
  }
  return { set: entries };
}
