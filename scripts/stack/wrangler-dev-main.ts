/**
 * The Worker's local server, in a process of its own (scripts/stack/wrangler-dev.ts starts it):
 * the bundle `wrangler deploy` would upload, served by Miniflare in one workerd process with the
 * bindings wrangler's own `unstable_getMiniflareWorkerOptions` derives from wrangler.toml.
 *
 * Why not `wrangler dev` (or `unstable_startWorker`, its engine): it puts a proxy worker in a
 * second workerd process in front of the Worker, so the stable URL survives reloads, and logs
 * every request through wrangler's node process. Every request and every chunk of every stream
 * crossed both; on the relay bench that was a quarter of the stack's CPU per relayed call and
 * over a millisecond of each round trip (a plain `tools/call`: 3.0 → 1.8 ms), none of it present
 * in a deployed Worker. This server has neither:
 *
 * - No proxy, no reload: the stack serves the code it started with; restart it after a change.
 * - No devtools inspector (debug the Worker with `npx wrangler dev`).
 * - No request log lines: the Worker's own JSON log lines are written as they are.
 *
 * The same as `wrangler dev`: the bundle (wrangler's bundler, the console's custom build
 * included), the bindings and compatibility settings, the persistence layout under
 * `--persist-to` (`v3/`, so state carries over between the two), the assets. The bundle and the
 * options wrangler derives are made once per content of the sources (scripts/stack/worker-bundle.ts,
 * kept under `--cache-dir`): a server started again on the same sources does not load wrangler.
 * Variables come from `--env-file` alone (never .dev.vars, never the process environment), over
 * wrangler.toml's `[vars]`.
 *
 * Stops on SIGTERM or SIGINT (Miniflare stops workerd), and exits non-zero when the Worker cannot
 * be bundled or cannot start.
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare, type V4WorkerOptions } from "miniflare";
import { parseEnvFile } from "./env-file.js";
import { prepareWorker } from "./worker-bundle.js";

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    port: { type: "string" },
    "persist-to": { type: "string" },
    "env-file": { type: "string" },
    "cache-dir": { type: "string" },
  },
  strict: true,
});
const { config, port, "persist-to": persistTo, "env-file": envFile, "cache-dir": cacheDir } = values;
if (!config || !port || !persistTo || !envFile || !cacheDir) {
  process.stderr.write(
    "usage: wrangler-dev-main --config F --port N --persist-to DIR --env-file F --cache-dir DIR\n",
  );
  process.exit(2);
}

/** Writes the Worker's console output as it is: one JSON log line per line. */
function workerOutput({ level, message }: { level: string; message: string }): void {
  (level === "warn" || level === "error" ? process.stderr : process.stdout).write(`${message}\n`);
}

try {
  const prepared = await prepareWorker(resolve(config), resolve(cacheDir));
  const vars = parseEnvFile(await readFile(envFile, "utf8"));
  // The bundle is one ES module with nothing beside it to import, so the rules for finding other
  // modules by name (which Miniflare's conversion refuses) have nothing to do.
  const { modulesRules: _unused, ...derived } = prepared.workerOptions;
  const worker = {
    ...derived,
    name: prepared.name,
    modules: true,
    modulesRoot: prepared.dir,
    scriptPath: join(prepared.dir, "index.js"),
    bindings: { ...prepared.vars, ...vars },
  } as V4WorkerOptions;
  // wrangler derives its options in Miniflare's v4 shape, as `wrangler dev` does; Miniflare converts them.
  const options = convertV4MiniflareOptions({
    host: "127.0.0.1",
    port: Number(port),
    resourcePersistencePath: resolve(persistTo, "v3"),
    // The placeholder `request.cf` (the real one is fetched from Cloudflare, and tests are offline).
    cf: false,
    logRequests: false,
    log: new Log(LogLevel.WARN),
    handleStructuredLogs: workerOutput,
    workers: [worker],
  });
  const mf = new Miniflare(options);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void mf.dispose().finally(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  const url = await mf.ready;
  process.stdout.write(`Ready on ${url.origin}\n`);
} catch (err) {
  process.stderr.write(
    `the Worker did not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
}
