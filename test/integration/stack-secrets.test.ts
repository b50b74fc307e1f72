/**
 * Tokens stay off command lines: the local stack hands the Worker its variables through a 0600
 * `--env-file` and the host-agent its token through the environment, so `ps` shows no secret.
 * And the Worker still sees every value exactly (tokens, a JSON list, a `$`).
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAll } from "../../scripts/build.js";
import { EnvFileError, formatEnvFile, parseEnvFile } from "../../scripts/stack/env-file.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { LocalStack } from "../../scripts/stack/local-stack.js";
import { listProcesses, runningInGroups } from "./process-table.js";

// `$HOME` must reach the Worker as written, not expanded by wrangler's dotenv loader.
// Lowercase, as browsers serialize origins; the $ must reach the Worker unexpanded.
const DOLLAR_ORIGIN = "http://x$home.example";

let stack: LocalStack;
let host: HostAgent;

beforeAll(async () => {
  await buildAll();
  stack = await LocalStack.start({
    extraTokens: ["other"],
    // wrangler.toml sets OUBLIETTE_ALLOWED_ORIGINS = "": the env file must override it.
    vars: { OUBLIETTE_ALLOWED_ORIGINS: `http://allowed.example,${DOLLAR_ORIGIN}` },
  });
  host = await stack.addHost({ runtime: "process" });
});

afterAll(async () => {
  await stack?.stop();
});

function initialize(token: string, origin?: string): Promise<Response> {
  return fetch(stack.mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(origin ? { origin } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "secrets-test", version: "1" },
      },
    }),
    signal: AbortSignal.timeout(15_000),
  });
}

describe("command lines", () => {
  it("of no process on this machine contain a token", () => {
    const secrets = [stack.adminToken, stack.hostToken, stack.extraTokens.other ?? "unset"];
    const offenders = listProcesses().filter((p) => secrets.some((s) => p.cmdline.includes(s)));
    expect(offenders.map((p) => `${p.pid}: ${p.cmdline.slice(0, 80)}`)).toEqual([]);
  });

  it("were checked where the tokens go: wrangler, its workerd and the host-agent", () => {
    const worker = runningInGroups(new Set([stack.worker.process.pid ?? -1]));
    expect(worker.some((p) => /wrangler/.test(p.cmdline))).toBe(true);
    expect(worker.some((p) => /workerd/.test(p.cmdline))).toBe(true);
    expect(worker.find((p) => /wrangler/.test(p.cmdline))?.cmdline).toContain("--env-file");
    const agent = runningInGroups(new Set([host.process.pid ?? -1]));
    expect(agent.some((p) => /host-agent/.test(p.cmdline))).toBe(true);
  });

  it("leave the host token to the host-agent's environment", async () => {
    const environ = await readFile(`/proc/${host.process.pid}/environ`, "utf8");
    expect(environ.split("\0")).toContain(`OUBLIETTE_HOST_TOKEN=${stack.hostToken}`);
  });
});

describe("the env file", () => {
  it("is readable by its owner only, and holds the tokens", async () => {
    const file = join(stack.dir, "worker.env");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, "utf8")).toContain(stack.adminToken);
  });

  it("escapes $ and refuses what dotenv cannot carry unaltered", () => {
    // Both forms dotenv-expand would expand: $NAME and ${NAME}.
    const braced = ["$", "{B}"].join("");
    expect(formatEnvFile({ A: `x$HOME${braced}`, B: '["json"]' })).toBe(
      `A='x\\$HOME\\${braced}'\nB='["json"]'\n`,
    );
    expect(() => formatEnvFile({ A: "it's" })).toThrow(EnvFileError);
    expect(() => formatEnvFile({ A: "two\nlines" })).toThrow(EnvFileError);
    expect(() => formatEnvFile({ A: "ends\\" })).toThrow(EnvFileError);
    expect(() => formatEnvFile({ "A B": "x" })).toThrow(EnvFileError);
  });

  it("is read back by the Worker's server exactly as it was given", async () => {
    const vars = { A: `x$HOME\\$B\\ y`, B: '["json", {"k": "v"}]', C: "", D: "a=b # not a comment" };
    expect(parseEnvFile(formatEnvFile(vars))).toEqual(vars);
    const written = parseEnvFile(await readFile(join(stack.dir, "worker.env"), "utf8"));
    expect(written.OUBLIETTE_ADMIN_TOKEN).toBe(stack.adminToken);
  });

  it("refuses a line it did not write, without quoting it (a value may be a token)", () => {
    const read = () => parseEnvFile("A='ok'\nB=oub_secret\n");
    expect(read).toThrow(EnvFileError);
    expect(read).toThrow("line 2 is not NAME='value'");
    expect(read).not.toThrow(/oub_secret/);
  });
});

describe("the Worker sees the values", () => {
  it("authenticates the admin token and refuses another", async () => {
    expect((await initialize(stack.adminToken)).status).toBe(200);
    expect((await initialize(`oub_${"0".repeat(64)}`)).status).toBe(401);
  });

  it("authenticates a token listed in OUBLIETTE_STATIC_TOKENS (JSON)", async () => {
    expect((await initialize(stack.extraTokens.other ?? "")).status).toBe(200);
  });

  it("accepts the host token (the host-agent registered)", async () => {
    expect(await host.waitForLog(/registered with the Worker/)).toBeTruthy();
  });

  it("gets OUBLIETTE_ALLOWED_ORIGINS over wrangler.toml's, with its $ unexpanded", async () => {
    expect((await initialize(stack.adminToken, "http://allowed.example")).status).toBe(200);
    expect((await initialize(stack.adminToken, DOLLAR_ORIGIN)).status).toBe(200);
    expect((await initialize(stack.adminToken, "http://elsewhere.example")).status).toBe(403);
  });
});
