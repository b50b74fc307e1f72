/**
 * `npm start`: the whole product on this machine. Starts the Worker under `wrangler dev` and a
 * host-agent connected to it (Docker when an engine is reachable, otherwise local processes),
 * then prints the MCP URL, the admin token and how to add it to an MCP client.
 * State and tokens persist under .oubliette/dev (tokens also in .dev.vars for plain wrangler dev).
 */
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildAll, repoRoot } from "./build.js";
import { ensureDockerEngine, isDockerReachable } from "./docker/engine.js";
import { ensureDroidImage } from "./docker/images.js";
import { LocalStack } from "./stack/local-stack.js";
import { newToken } from "./stack/tokens.js";

const say = (line = "") => process.stdout.write(`${line}\n`);
const DEV_VARS = join(repoRoot, ".dev.vars");

/** Reads the dev tokens from .dev.vars, creating them on first run. */
async function devTokens(): Promise<{ admin: string; host: string }> {
  const text = existsSync(DEV_VARS) ? await readFile(DEV_VARS, "utf8") : "";
  const read = (name: string) => new RegExp(`^${name}=(.+)$`, "m").exec(text)?.[1]?.trim();
  const admin = read("OUBLIETTE_ADMIN_TOKEN") ?? newToken();
  const host = read("OUBLIETTE_HOST_TOKEN") ?? newToken();
  if (!read("OUBLIETTE_ADMIN_TOKEN") || !read("OUBLIETTE_HOST_TOKEN")) {
    const kept = text.split("\n").filter((l) => l.trim() && !/^OUBLIETTE_(ADMIN|HOST)_TOKEN=/.test(l));
    const lines = [...kept, `OUBLIETTE_ADMIN_TOKEN=${admin}`, `OUBLIETTE_HOST_TOKEN=${host}`];
    await writeFile(DEV_VARS, `${lines.join("\n")}\n`, { mode: 0o600 });
  }
  return { admin, host };
}

async function main(): Promise<void> {
  say("oubliette: building the host-agent, container-client and scripted droid");
  const bundles = await buildAll();
  const tokens = await devTokens();
  let image: string | undefined;
  if (await isDockerReachable()) {
    const engine = await ensureDockerEngine({ install: false });
    image = await ensureDroidImage(engine.docker, bundles, (line) => say(`oubliette: ${line}`));
  } else {
    say("oubliette: no Docker Engine is reachable; droids will run as local processes (no isolation)");
  }
  const port = Number(process.env.PORT ?? 8787);
  const stack = await LocalStack.start({
    dir: join(repoRoot, ".oubliette", "dev"),
    port,
    adminToken: tokens.admin,
    hostToken: tokens.host,
    vars: process.env.OUBLIETTE_ALLOWED_ORIGINS
      ? { OUBLIETTE_ALLOWED_ORIGINS: process.env.OUBLIETTE_ALLOWED_ORIGINS }
      : {},
  });
  const host = await stack.addHost({ runtime: image ? "docker" : "process", image, hostId: "local" });
  const mcpUrl = stack.mcpUrl.toString();
  say();
  say("Oubliette Edge is running.");
  say();
  say(`  MCP URL:      ${mcpUrl}`);
  say(`  Admin token:  ${tokens.admin}`);
  say(`  Host-agent:   ${host.hostId} (${image ? `Docker, image ${image}` : "local processes"})`);
  say(`  Logs:         ${stack.worker.logFile}, ${host.logFile}`);
  say();
  say("Add it to an MCP client:");
  say(
    `  claude mcp add --transport http oubliette ${mcpUrl} --header "Authorization: Bearer ${tokens.admin}"`,
  );
  say(
    `  or in a client's JSON config: {"url": "${mcpUrl}", "headers": {"Authorization": "Bearer ${tokens.admin}"}}`,
  );
  say();
  say("Press Ctrl-C to stop.");

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    say("\noubliette: stopping");
    await stack.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
  stack.worker.process.once("exit", (code) => {
    if (stopping) return;
    process.stderr.write(`oubliette: wrangler dev exited (${code}); see ${stack.worker.logFile}\n`);
    void stop();
  });
}

await main();
