/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against the Worker
 * under wrangler dev: the server scenarios that apply to a server offering tools and logging —
 * initialization, `logging/setLevel`, ping, `tools/list`, concurrent POST streams and DNS
 * rebinding protection. (The suite's other scenarios call the fixed tools, resources and prompts
 * of its reference server.) The suite's client cannot send a token, so it talks to a loopback
 * proxy that adds the admin token to each request and passes everything else through as is.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestStack } from "../support/stack.js";
import { startTokenProxy, type TokenProxy } from "../support/token-proxy.js";

const CLI = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/conformance/dist/index.js", import.meta.url),
);

const SCENARIOS = [
  "server-initialize",
  "logging-set-level",
  "ping",
  "tools-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

let stack: TestStack;
let proxy: TokenProxy;
let proxyUrl = "";

beforeAll(async () => {
  stack = await TestStack.start();
  proxy = await startTokenProxy(new URL(stack.mcpUrl), stack.adminToken);
  proxyUrl = proxy.url;
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await stack?.stop();
});

describe("the official MCP conformance suite", () => {
  it.each(SCENARIOS)("passes %s", async (scenario) => {
    const run = await promisify(execFile)(
      process.execPath,
      [CLI, "server", "--url", proxyUrl, "--scenario", scenario],
      { timeout: 60_000 },
    ).catch((err: { stdout?: string; stderr?: string; code?: number }) => ({
      stdout: `${err.stdout ?? ""}${err.stderr ?? ""}`,
      stderr: "",
      failed: err.code ?? 1,
    }));
    const output = `${run.stdout}${run.stderr}`;
    expect("failed" in run, output).toBe(false);
    expect(output).toMatch(/Passed: (\d+)\/\1, 0 failed/);
  });
});
