/**
 * V8 flags the host-agent runs with, wherever it runs (the stack's child process, the service's
 * unit, the host-agent image). package.json's `host-agent` script says the same.
 * - Its work is many small messages, so a young generation of 1 MiB semi-spaces (Node's default
 *   grows them to 16 MiB) and V8's heap sizing for memory over speed keep its resident memory
 *   near what it holds (the relay bench's peak fell from ~118 to ~80 MiB).
 * - No optimizing compilers (TurboFan, Maglev): its functions run as bytecode and Sparkplug's
 *   baseline code. The compilers' own code is pages of the node binary that count in its
 *   resident memory once run, and the code they make is memory too: ~6 MiB less at start and
 *   7 at the relay bench's peak. What it does per message is light (parse, route, frame): the
 *   bench saw its CPU per relayed call move from 0.22 to 0.23 ms.
 */
export const HOST_AGENT_NODE_FLAGS = [
  "--max-semi-space-size=1",
  "--optimize-for-size",
  "--no-opt",
  "--no-maglev",
];

/**
 * Environment the host-agent's process starts with, wherever it runs: one malloc arena. glibc
 * gives each thread that allocates (libuv's pool, V8's helpers) an arena of its own, and each kept
 * what it grew to: under a relay load the host-agent's resident memory climbed ~10 MiB higher
 * with them (peak 83 against 77 MiB in the relay bench's shape). Its threads allocate little.
 */
export const HOST_AGENT_PROCESS_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "1" };
