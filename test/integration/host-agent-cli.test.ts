/**
 * The host-agent command line: help, configuration errors, and a Worker that refuses the host
 * token, each with a clear message and exit code (the agent is run as a real process).
 */
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildAll, bundles } from "../../scripts/build.js";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runHostAgent(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bundles.hostAgent, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let refusing: Server;
let refusingUrl: string;

beforeAll(async () => {
  await buildAll();
  // A Worker stand-in that refuses every tunnel upgrade, as the real one does for a wrong token.
  refusing = createServer((_req, res) => {
    res.writeHead(401, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "unauthorized", message: "a valid host token is required" } }));
  });
  await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
  const address = refusing.address();
  refusingUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => new Promise<void>((resolve) => refusing.close(() => resolve())));

it("names its subcommands with --help", async () => {
  const run = await runHostAgent(["--help"]);
  expect(run.code).toBe(0);
  for (const command of ["start", "images", "doctor", "service"])
    expect(run.stdout).toMatch(new RegExp(`^  ${command} \\[options\\]`, "m"));
});

it("prints start's options with start --help", async () => {
  const run = await runHostAgent(["start", "--help"]);
  expect(run.code).toBe(0);
  for (const flag of [
    "--worker-url",
    "--host-token",
    "--runtime",
    "--image",
    "--agent-command",
    "--socket-dir",
    "--git-credentials",
    "--git-allow-local-remotes",
  ]) {
    expect(run.stdout).toContain(flag);
  }
  expect(run.stdout).toContain("OUBLIETTE_WORKER_URL");
});

it("exits 2 naming what is missing when the Worker URL and token are not given", async () => {
  const run = await runHostAgent([]);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(/--worker-url/);
  expect(run.stderr).toMatch(/--host-token/);
});

it("refuses an OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES it cannot read, rather than take it as yes", async () => {
  const run = await runHostAgent(["--worker-url", refusingUrl, "--host-token", "x".repeat(20)], {
    OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES: "yes please",
  });
  expect(run.code).toBe(2);
  expect(run.stderr).toContain("OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES must be 1, true, 0 or false");
});

it("refuses a git credentials file it cannot use, naming the problem and never the secret", async () => {
  const file = join(tmpdir(), `oub-git-creds-${process.pid}.json`);
  writeFileSync(file, JSON.stringify({ "bad name!": { token: "s3cr3t-token-value" } }));
  try {
    const run = await runHostAgent(
      [
        "--worker-url",
        refusingUrl,
        "--host-token",
        "x".repeat(20),
        "--runtime",
        "process",
        "--agent-command",
        '["node","-e","0"]',
        "--git-credentials",
        file,
      ],
      {},
    );
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/"level":"fatal".*invalid git credentials/);
    expect(run.stdout + run.stderr).not.toContain("s3cr3t-token-value");
  } finally {
    rmSync(file, { force: true });
  }
});

it("rejects a malformed --agent-command", async () => {
  const run = await runHostAgent([
    "--worker-url",
    refusingUrl,
    "--host-token",
    "x".repeat(20),
    "--agent-command",
    "node droid.js",
  ]);
  expect(run.code).not.toBe(0);
  expect(run.stderr).toMatch(/JSON array/);
});

it("exits 1 with an actionable log line when the Worker refuses its token", async () => {
  const run = await runHostAgent(
    [
      "--worker-url",
      refusingUrl,
      "--runtime",
      "process",
      "--agent-command",
      '["node","-e","0"]',
      "--socket-dir",
      "/tmp/oub-cli-test",
    ],
    { OUBLIETTE_HOST_TOKEN: "oub_wrong_token_for_this_test" },
  );
  expect(run.code).toBe(1);
  expect(run.stdout).toMatch(/"level":"fatal".*check --host-token and --worker-url/);
  expect(run.stdout).not.toContain("oub_wrong_token_for_this_test");
});
