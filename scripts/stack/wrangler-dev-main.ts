/**
 * The Worker under wrangler's dev server, in a process of its own (scripts/stack/wrangler-dev.ts
 * starts it): `unstable_startWorker`, the engine `wrangler dev` itself runs on (the same
 * bundling, Miniflare, proxy worker and persistence), started with two differences from the CLI:
 *
 * - No devtools inspector. The CLI always starts one, and its bridge reports every devtools event
 *   to wrangler's node process, each chunk of a streamed response among them: every caller tool
 *   request's SSE event paid that round trip (the relay bench: relayed p50 8.2 → 6.8 ms, 1.1 ms
 *   less CPU per relayed call). Debugging the Worker with devtools: run `npx wrangler dev`.
 * - No file watching: the stack serves the code it started with; restart it after a change.
 *
 * Stops on SIGTERM or SIGINT (wrangler tears down its workerd processes), and exits non-zero
 * when the Worker cannot start.
 */
import { parseArgs } from "node:util";
import { unstable_startWorker } from "wrangler";

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    port: { type: "string" },
    "persist-to": { type: "string" },
    "env-file": { type: "string" },
  },
  strict: true,
});
const { config, port, "persist-to": persistTo, "env-file": envFile } = values;
if (!config || !port || !persistTo || !envFile) {
  process.stderr.write("usage: wrangler-dev-main --config F --port N --persist-to DIR --env-file F\n");
  process.exit(2);
}

try {
  const worker = await unstable_startWorker({
    config,
    envFiles: [envFile],
    dev: {
      inspector: false,
      server: { hostname: "127.0.0.1", port: Number(port) },
      persist: persistTo,
      watch: false,
    },
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void worker.dispose().finally(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  await worker.ready;
  process.stdout.write(`Ready on ${(await worker.url).origin}\n`);
} catch (err) {
  process.stderr.write(
    `the Worker did not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
}
