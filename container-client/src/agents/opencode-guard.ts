/**
 * Asking: OpenCode's server password kept from the commands it runs. `opencode acp` serves its own
 * HTTP API on the container's loopback and drives itself through it; whoever holds the password
 * can answer its permission questions or rewrite its config there, so a command a person allowed
 * must not hold it. A command runs as the agent's own uid, so no file or variable the agent can
 * read would hide it; what does is this plugin, loaded from our config into OpenCode's own process:
 * - it makes that process undumpable (`prctl(PR_SET_DUMPABLE, 0)` through `bun:ffi`), so a
 *   process of the same uid can no longer read its `/proc/<pid>/environ` or memory, nor trace it;
 * - once OpenCode's server is up (its first prompt), it deletes the password from OpenCode's
 *   environment, which every child inherits (commands, git, language servers), and asks its own
 *   server, unauthenticated, for its config: anything but a 401 stops OpenCode at once. (The server
 *   reads the password once, when it starts serving: deleting it before that leaves the server
 *   open, which this check would catch.)
 * OpenCode cannot be made undumpable, or the check fails: the plugin ends OpenCode, so the agent
 * never runs with its password within its commands' reach. The MCP server OpenCode starts before
 * the first prompt gets the variable emptied in its own environment (see opencode.ts).
 * See docs/approval-hooks.md, "What an agent rewrites while it runs".
 */

/** The variable OpenCode reads its server password from. */
export const SERVER_PASSWORD_ENV = "OPENCODE_SERVER_PASSWORD";

/** The exit code of an OpenCode the guard stopped. */
export const GUARD_EXIT_CODE = 78;

/** The plugin's source, an ES module OpenCode (Bun) imports from a `file://` URL. */
export const OPENCODE_GUARD_PLUGIN = `// Written by Oubliette before each start of OpenCode (container-client/src/agents/opencode-guard.ts).
import { dlopen, FFIType } from "bun:ffi";

const PASSWORD = ${JSON.stringify(SERVER_PASSWORD_ENV)};
const PR_GET_DUMPABLE = 3;
const PR_SET_DUMPABLE = 4;
const LIBC = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"];

function stop(why) {
  process.stderr.write("oubliette guard: OpenCode stops: " + why + "\\n");
  process.exit(${GUARD_EXIT_CODE});
}

function undumpable() {
  const prctl = { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 };
  for (const name of LIBC) {
    let libc;
    try {
      libc = dlopen(name, { prctl });
    } catch {
      continue;
    }
    try {
      libc.symbols.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      return libc.symbols.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) === 0;
    } finally {
      libc.close();
    }
  }
  return false;
}

if (!undumpable()) stop("its process could not be made undumpable, so its commands could read its server password");

let hidden;
function hide(serverUrl) {
  hidden ??= (async () => {
    delete process.env[PASSWORD];
    let status = 0;
    try {
      status = (await fetch(new URL("/config", serverUrl), { redirect: "manual" })).status;
    } catch (error) {
      stop("its server could not be checked: " + error);
    }
    if (status !== 401) stop("its server answered " + status + " without its password");
  })();
  return hidden;
}

export const OublietteGuard = async ({ serverUrl }) => {
  const guard = () => hide(serverUrl);
  return { "chat.message": guard, "chat.params": guard, "tool.execute.before": guard, "shell.env": guard };
};
`;
