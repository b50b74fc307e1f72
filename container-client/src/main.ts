/**
 * oubliette-container-client, the program inside every session's container, in two modes:
 * - `runner`: the container's main process; starts the agent, owns its stdio, streams its events
 *   to the host-agent (see runner/);
 * - `git-remote`: `git-remote-oubliette`, git's helper for the project's remote (see git/);
 * - default: the droid's MCP server over stdio, lending it the caller's tools (see mcp/).
 * Logs go to stderr as JSON lines (stdout is the MCP channel in the default mode).
 */
import { createLogger } from "../../lib/log.js";
import { runRemoteHelper } from "./git/remote-helper.js";
import { serveDroid } from "./mcp/serve-droid.js";
import { runRunner } from "./runner/main.js";

const VERSION = "0.1.0";
const modes = { runner: "runner", "git-remote": "git-remote-oubliette" } as const;
const arg = process.argv[2];
const mode = arg === "runner" || arg === "git-remote" ? arg : "mcp";
const log = createLogger({ name: mode === "mcp" ? "container-client" : modes[mode], fd: 2 });

process.on("uncaughtException", (err) => {
  log.fatal({ err }, "uncaught exception");
  process.exit(1);
});
process.on("unhandledRejection", (err) => {
  log.fatal({ err }, "unhandled rejection");
  process.exit(1);
});

if (mode === "runner") await runRunner(log);
else if (mode === "git-remote") process.exitCode = await runRemoteHelper(process.argv.slice(3), log);
else await serveDroid(log, VERSION);
