/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against the Worker
 * under wrangler dev: the server scenarios that apply to a server offering tools and logging —
 * initialization, `logging/setLevel`, ping, `tools/list`, concurrent POST streams and DNS
 * rebinding protection. (The suite's other scenarios call the fixed tools, resources and prompts
 * of its reference server.) The suite's client cannot send a token, so it talks to a loopback
 * proxy that adds the admin token to each request and passes everything else through as is.
 */
import { execFile } from "node:child_process";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestStack } from "../support/stack.js";

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
let proxy: Server;
let proxyUrl = "";

/** Passes requests to the Worker, adding the admin token to those that carry none. */
function tokenProxy(target: URL, token: string): Server {
  return createServer((req, res) => {
    const headers = { ...req.headers };
    headers.authorization ??= `Bearer ${token}`;
    const upstream = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
}

beforeAll(async () => {
  stack = await TestStack.start();
  const target = new URL(stack.mcpUrl);
  proxy = tokenProxy(target, stack.adminToken);
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname}`;
}, 120_000);

afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
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
