/**
 * `.dev.vars` under `npm start`: wrangler now gets an env file instead of reading it, so start.ts
 * passes every variable in it on, and keeps the tokens it holds across restarts.
 */
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import { buildAll } from "../../scripts/build.js";
import { parseDevVars } from "../../scripts/stack/dev-vars.js";
import { freePort } from "../../scripts/stack/port.js";
import { newToken } from "../../scripts/stack/tokens.js";
import { runStart, START_TEST_MS, type StartRun } from "./start-run.js";

vi.setConfig({ testTimeout: START_TEST_MS });

const runs: StartRun[] = [];

beforeAll(async () => {
  await buildAll();
});

afterEach(async () => {
  await Promise.all(runs.splice(0).map((run) => run.dispose()));
});

it("parses dotenv lines as wrangler does", () => {
  const text = [
    "# a comment",
    "A=plain",
    "export B='single $x'",
    'C="double"',
    "D=value # trailing comment",
    "",
    "not a line",
  ].join("\n");
  expect(parseDevVars(text)).toEqual({ A: "plain", B: "single $x", C: "double", D: "value" });
});

it("uses the tokens in .dev.vars and passes its other variables to the Worker", async () => {
  const admin = newToken();
  const devVars = [
    `OUBLIETTE_ADMIN_TOKEN=${admin}`,
    `OUBLIETTE_HOST_TOKEN=${newToken()}`,
    "OUBLIETTE_ALLOWED_ORIGINS=http://from-dev-vars.example",
  ].join("\n");
  const run = await runStart({ PORT: String(await freePort()) }, { ".dev.vars": `${devVars}\n` });
  runs.push(run);
  const urlLine = await run.waitForLine(/MCP URL:/);
  expect(await run.waitForLine(/Admin token:/)).toContain(`Admin token:  ${admin}`);
  const mcpUrl = urlLine.replace(/^.*MCP URL:\s+/, "").trim();
  const initialize = (origin: string) =>
    fetch(mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${admin}`,
        origin,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
  expect((await initialize("http://from-dev-vars.example")).status).toBe(200);
  expect((await initialize("http://elsewhere.example")).status).toBe(403);
  // The console's address is printed too; it answers with the sign-in page, its script with code.
  const consoleLine = await run.waitForLine(/Console:/);
  const consoleUrl = consoleLine.replace(/^.*Console:\s+/, "").split(" ")[0] ?? "";
  expect(new URL(consoleUrl).origin).toBe(new URL(mcpUrl).origin);
  const signInPage = await fetch(consoleUrl);
  expect(signInPage.status).toBe(200);
  expect(await signInPage.text()).toContain("Sign in to the console");
  const script = await fetch(new URL("/console/app.js", consoleUrl));
  expect(script.status).toBe(200);
  expect((await script.text()).length).toBeGreaterThan(1000);
  run.child.kill("SIGINT");
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(run.leftovers()).toEqual([]);
});
