/**
 * The deploy path without a Cloudflare account: `npx wrangler deploy --dry-run` bundles the
 * repository's Worker offline (no network is needed; telemetry is turned off), and `npm run
 * deploy`'s script (scripts/deploy/main.ts) with `--dry-run` prints its findings — the public
 * origin missing or set, the KV namespace provisioned, the secrets not checked — and then runs
 * that dry run. Without `--dry-run` and without a Cloudflare login it stops before wrangler deploy.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const scratch = mkdtempSync(join(tmpdir(), "oubliette-deploy-"));
const ORIGIN = "https://oubliette-edge.example.workers.dev";

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command in the repository. wrangler gets an empty home: no login, no account and no
 * token of whoever runs the tests, so nothing here can reach a real account, and no telemetry.
 */
function run(command: string, args: string[]): Promise<Run> {
  const home = mkdtempSync(join(scratch, "home-"));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
  delete env.CLOUDFLARE_API_TOKEN;
  delete env.CLOUDFLARE_API_KEY;
  delete env.CLOUDFLARE_ACCOUNT_ID;
  env.WRANGLER_SEND_METRICS = "false";
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
    child.once("error", fail);
    child.once("close", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

const deployScript = (args: string[]) =>
  run(process.execPath, ["--import", "tsx", "scripts/deploy/main.ts", ...args]);

/** The Worker bundle wrangler wrote to `outdir`: the entry module, exporting the Durable Objects. */
function expectBundle(outdir: string): void {
  const bundle = join(outdir, "index.js");
  expect(statSync(bundle).size).toBeGreaterThan(100_000);
  const text = readFileSync(bundle, "utf8");
  for (const name of ["SessionDurableObject", "TokenDirectoryDurableObject", "JobDirectoryDurableObject"])
    expect(text).toContain(name);
}

describe("npx wrangler deploy --dry-run", () => {
  it("bundles the Worker with its bindings, offline", async () => {
    const outdir = join(scratch, "wrangler");
    const r = await run("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("--dry-run: exiting now.");
    expect(r.stdout).toMatch(/env\.OAUTH_KV\s+KV Namespace/);
    expect(r.stdout).toMatch(/env\.OAUTH_REGISTER_LIMIT .*Rate Limit/);
    expectBundle(outdir);
  });
});

describe("npm run deploy's script", () => {
  it("with --dry-run prints the findings, says the secrets are not checked, and runs the dry run", async () => {
    const outdir = join(scratch, "script");
    const r = await deployScript(["--dry-run", "--outdir", outdir]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    // wrangler.toml ships OUBLIETTE_PUBLIC_ORIGINS empty: reported, and the dry run goes on anyway.
    expect(lines).toContainEqual(
      expect.stringMatching(/^✗ OUBLIETTE_PUBLIC_ORIGINS is empty: .* — set it to the Worker's origin/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^✓ KV namespace OAUTH_KV: no id, so wrangler deploy creates/),
    );
    expect(lines).toContain(
      "- secrets not checked: --dry-run uploads nothing and needs no Cloudflare account",
    );
    expect(lines).toContain("oubliette: 1 to fix: a real deploy would stop here; the dry run goes on");
    expect(r.stdout).not.toContain("wrangler secret list");
    expect(r.stdout).toMatch(/env\.OUBLIETTE_PUBLIC_ORIGINS \(""\)/);
    // The findings come before wrangler's output.
    expect(r.stdout.indexOf("✓ KV namespace")).toBeLessThan(r.stdout.indexOf("--dry-run: exiting now."));
    expectBundle(outdir);
  });

  it("with the origin passed as --var finds nothing to fix, and wrangler gets the var", async () => {
    const outdir = join(scratch, "script-var");
    const r = await deployScript([
      "--dry-run",
      "--outdir",
      outdir,
      "--var",
      `OUBLIETTE_PUBLIC_ORIGINS:${ORIGIN}`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`✓ OUBLIETTE_PUBLIC_ORIGINS is ${ORIGIN} (--var)`);
    expect(r.stdout).not.toContain("✗");
    expect(r.stdout).not.toContain("to fix");
    // wrangler hides the values of --var in its binding table: the var reached it (unset, it shows "").
    expect(r.stdout).toMatch(/env\.OUBLIETTE_PUBLIC_ORIGINS \("\(hidden\)"\)/);
    expect(r.stdout).toContain("--dry-run: exiting now.");
    expectBundle(outdir);
  });

  it("without --dry-run and signed out stops before wrangler deploy, saying how to sign in", async () => {
    const r = await deployScript(["--var", `OUBLIETTE_PUBLIC_ORIGINS:${ORIGIN}`]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /^✗ the Worker's secrets could not be listed: wrangler is not logged in to Cloudflare — npx wrangler login/m,
    );
    expect(r.stdout).toContain("oubliette: 1 to fix, nothing deployed");
    expect(r.stdout).not.toContain("running wrangler deploy");
  });
});
