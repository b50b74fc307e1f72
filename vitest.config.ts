/**
 * Test projects, run one group after another, cheapest first (the longest files of each first:
 * test/support/sequencer.ts); the in-workerd and integration projects form one group:
 * - unit: pure functions and in-process pairs;
 * - workers: Durable Objects and routes inside workerd (@cloudflare/vitest-plugin);
 * - integration: real processes and sockets, no Docker (container-client, scripted droid);
 * - docker: a real Docker Engine (started, or on a bare CI machine installed, by the global
 *   setup, which prepares the engine and the images while the projects before it run; if it
 *   cannot start, every Docker test fails) and the end-to-end tests across wrangler dev,
 *   host-agents, containers and the MCP SDK client.
 * Every group runs at least two files at once: most of their time is spent waiting on other
 * processes (workerd, wrangler, containers), so two keep a two-core machine busy.
 */
import { availableParallelism } from "node:os";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { buildConsole } from "./scripts/build-console.js";
import LongestFirstSequencer from "./test/support/sequencer.js";

/** Files run at once by the projects without Docker (vitest's default is one on two cores). */
const WORKERS = Math.max(2, availableParallelism() - 1);
/**
 * The in-workerd and integration files run as one group, this many files at once in all (projects
 * of one group share its count): an in-workerd file is bound by vitest's main process (it serves
 * the modules workerd loads), an integration file mostly waits on the processes it starts, so
 * together they keep two cores busy (the two apart: 272 s + 220 s in CI; together on an idle
 * machine 380 s against 430 s).
 */
const BESIDE = WORKERS + 1;

// The console's static assets are part of the Worker's configuration (wrangler.toml `[assets]`),
// which the in-workerd tests load too: built first, from the sources under test.
buildConsole();

/** Fixed test tokens for the in-workerd tests (never used outside them). */
export const WORKERS_TEST_VARS = {
  OUBLIETTE_ADMIN_TOKEN: "oub_0000000000000000000000000000000000000000000000000000000000000001",
  OUBLIETTE_HOST_TOKEN: "oub_0000000000000000000000000000000000000000000000000000000000000002",
  // sha256 of oub_...03, scope admin; sha256 of oub_...04, scope admin:ro
  OUBLIETTE_STATIC_TOKENS: JSON.stringify([
    {
      id: "other",
      sha256: "70c46c859a502d78fa9bc1fd7694d2ecf6d96312579e5bff006a85f61370b4ec",
      scopes: ["admin"],
    },
    {
      id: "reader",
      sha256: "d632e5f592637c75b891891d5bd48e3d325cd8fadb8d30d3e9e5b30e9a6350b5",
      scopes: ["admin:ro"],
    },
  ]),
  OUBLIETTE_CALLER_GRACE_MS: "500",
  OUBLIETTE_KEEPALIVE_MS: "1000",
  OUBLIETTE_ALLOWED_ORIGINS: "http://allowed.example",
  // A spawn with no host connected fails with no_host after this long (the tests of it wait it out).
  OUBLIETTE_HOST_WAIT_MS: "500",
  // Host loss is driven by the registry's alarm with a fake clock; small, so real alarms that fire
  // on their own clean up the hosts earlier tests left behind.
  OUBLIETTE_HOST_GRACE_MS: "2000",
  // The origin the tests' requests go to (test/workers/support BASE); Host must be one of these.
  OUBLIETTE_PUBLIC_ORIGINS: "https://worker.test",
  // A call that becomes a job waits this long before answering its job id (30 s / 120 s deployed).
  OUBLIETTE_JOB_SHORT_WAIT_MS: "3000",
  OUBLIETTE_JOB_MEDIUM_WAIT_MS: "3000",
  // A call of a client that takes MCP tasks waits this long before answering a task (2 s deployed).
  OUBLIETTE_TASK_SHORTCUT_MS: "500",
};

export default defineConfig({
  test: {
    // The Durable Objects and processes log a JSON line per event; show logs of failing tests only.
    silent: "passed-only",
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
          maxWorkers: WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: WORKERS_TEST_VARS },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          // A file's first test loads the Worker's modules into workerd (a few seconds on two busy cores).
          testTimeout: 15_000,
          // The files share a workerd runtime, its loaded modules and Durable Objects (one each: ~2 s
          // per file to start, 144 s for the project against 56 s shared). Each test makes its own
          // projects, sessions and hosts; the one host registry holds them all, as deployed.
          isolate: false,
          deps: {
            optimizer: {
              ssr: {
                enabled: true,
                include: [
                  "@modelcontextprotocol/sdk/types.js",
                  "zod",
                  "hono",
                  "hono/cookie",
                  "hono/cors",
                  "hono/factory",
                  "hono/http-exception",
                  "jose",
                  "@cloudflare/workers-oauth-provider",
                  "@cfworker/json-schema",
                  "croner",
                  "picomatch",
                  "ipaddr.js",
                  "semver/functions/lt.js",
                  "semver/functions/valid.js",
                ],
              },
            },
          },
          // With the integration files, three at once (see BESIDE).
          maxWorkers: BESIDE,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/support/browser-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: BESIDE,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "docker",
          include: ["test/docker/**/*.test.ts", "test/e2e/**/*.test.ts"],
          globalSetup: ["test/support/docker-setup.ts", "test/support/browser-setup.ts"],
          // Each file waits here for the engine and images docker-setup prepares in the background.
          setupFiles: ["test/support/docker-wait.ts"],
          testTimeout: 120_000,
          // Some files build images of their own in beforeAll (a bare machine's first run takes long).
          hookTimeout: 900_000,
          // Each file starts its own Worker server, host-agent and containers, and mostly waits on
          // them: three at a time keep two cores ~93 % busy (two: 82 %). The agents files (five
          // CLIs each) start apart (test/support/sequencer.ts).
          maxWorkers: 3,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
