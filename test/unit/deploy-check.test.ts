/**
 * `npm run deploy`'s checks (scripts/deploy): each finding of checkDeploy, present and missing —
 * the admin and host tokens (plain secret, hash, hash in [vars]), a secret listing that failed,
 * OUBLIETTE_PUBLIC_ORIGINS (wrangler.toml or --var), the OAUTH_KV namespace (id, automatic
 * provisioning, provisioning off, an old wrangler), `--env` — and the pieces main.ts feeds it:
 * the command line, wrangler's secret listing and its failures, the repository's own wrangler.toml.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { checkDeploy, type DeployCheckInput } from "../../scripts/deploy/check-deploy.js";
import { versionAtLeast } from "../../scripts/deploy/check-oauth-kv.js";
import { NEW_TOKEN_COMMAND } from "../../scripts/deploy/check-secrets.js";
import { parseDeployArgs } from "../../scripts/deploy/deploy-args.js";
import { DeployError } from "../../scripts/deploy/errors.js";
import { type Finding, formatFinding } from "../../scripts/deploy/finding.js";
import { parsePublicOrigins } from "../../scripts/deploy/public-origins.js";
import { listingFromFailure, parseSecretList } from "../../scripts/deploy/secret-listing.js";
import { parseWranglerConfig } from "../../scripts/deploy/wrangler-config.js";

const ROOT = resolve(import.meta.dirname, "../..");
const ORIGIN = "https://oubliette-edge.example.workers.dev";

/** A deploy with everything in place; each test takes one thing away. */
function ready(overrides: Partial<DeployCheckInput> = {}): DeployCheckInput {
  return {
    config: {
      name: "oubliette-edge",
      vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN },
      kv_namespaces: [{ binding: "OAUTH_KV" }],
    },
    varOverrides: {},
    secrets: { kind: "listed", names: ["OUBLIETTE_ADMIN_TOKEN", "OUBLIETTE_HOST_TOKEN"], workerExists: true },
    wranglerVersion: "4.86.0",
    provisioningDisabled: false,
    ...overrides,
  };
}

/** The one finding whose `what` mentions `text`. */
function finding(findings: Finding[], text: string): Finding {
  const matches = findings.filter((f) => f.what.includes(text));
  expect(matches, `one finding about ${text} in ${JSON.stringify(findings)}`).toHaveLength(1);
  return matches[0] as Finding;
}

const listed = (...names: string[]): DeployCheckInput["secrets"] => ({
  kind: "listed",
  names,
  workerExists: true,
});

describe("checkDeploy with everything in place", () => {
  it("finds the admin token, the host token, the public origin and the KV namespace", () => {
    const findings = checkDeploy(ready());
    expect(findings).toHaveLength(4);
    expect(findings.every((f) => f.ok && f.fix === "")).toBe(true);
    expect(findings.map((f) => f.what)).toEqual([
      "admin token: secret OUBLIETTE_ADMIN_TOKEN is set",
      "host token: secret OUBLIETTE_HOST_TOKEN is set",
      `OUBLIETTE_PUBLIC_ORIGINS is ${ORIGIN} (wrangler.toml [vars])`,
      "KV namespace OAUTH_KV: no id, so wrangler deploy creates oubliette-edge-oauth-kv the first time and keeps the Worker's namespace after",
    ]);
  });
});

describe("the admin and host tokens", () => {
  for (const [name, label] of [
    ["OUBLIETTE_ADMIN_TOKEN", "admin token"],
    ["OUBLIETTE_HOST_TOKEN", "host token"],
  ] as const) {
    const other = name === "OUBLIETTE_ADMIN_TOKEN" ? "OUBLIETTE_HOST_TOKEN" : "OUBLIETTE_ADMIN_TOKEN";

    it(`${label}: missing, with the command that sets it and how to make one`, () => {
      const f = finding(checkDeploy(ready({ secrets: listed(other) })), label);
      expect(f.ok).toBe(false);
      expect(f.what).toBe(`${label}: neither ${name} nor ${name}_SHA256 is set`);
      expect(f.fix).toContain(`npx wrangler secret put ${name} and paste it`);
      expect(f.fix).toContain(NEW_TOKEN_COMMAND);
      expect(f.fix).toContain("oub_ and 64 hex digits");
      // The other token is still found.
      expect(checkDeploy(ready({ secrets: listed(other) })).filter((x) => !x.ok)).toHaveLength(1);
    });

    it(`${label}: its SHA-256 as a secret will do`, () => {
      const f = finding(checkDeploy(ready({ secrets: listed(other, `${name}_SHA256`) })), label);
      expect(f).toEqual({ what: `${label}: secret ${name}_SHA256 is set`, ok: true, fix: "" });
    });

    it(`${label}: its SHA-256 in [vars] will do (a hash is not secret), a malformed one will not`, () => {
      const hash = "A".repeat(64); // the Worker lowercases it
      const withHash = (value: string) =>
        checkDeploy(
          ready({
            secrets: listed(other),
            config: { name: "w", vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN, [`${name}_SHA256`]: value } },
          }),
        );
      expect(finding(withHash(hash), label)).toMatchObject({
        ok: true,
        what: `${label}: ${name}_SHA256 is set ([vars])`,
      });
      const bad = finding(withHash("not-a-hash"), label);
      expect(bad.ok).toBe(false);
      expect(bad.what).toContain("is not a SHA-256");
    });

    it(`${label}: a plain variable is read by the Worker too, and named as such`, () => {
      const f = finding(
        checkDeploy(ready({ secrets: listed(other), varOverrides: { [name]: "oub_x" } })),
        label,
      );
      expect(f.ok).toBe(true);
      expect(f.what).toContain("plain variable");
    });
  }

  it("names the environment in the command when deploying one", () => {
    const input = ready({
      envName: "staging",
      secrets: listed(),
      config: { name: "w", env: { staging: { vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN } } } },
    });
    const f = finding(checkDeploy(input), "admin token");
    expect(f.fix).toContain("npx wrangler secret put OUBLIETTE_ADMIN_TOKEN --env staging");
  });

  it("on a first deploy (no Worker yet, so no secrets) asks for both", () => {
    const findings = checkDeploy(ready({ secrets: { kind: "listed", names: [], workerExists: false } }));
    expect(findings.filter((f) => !f.ok).map((f) => f.what)).toEqual([
      "admin token: neither OUBLIETTE_ADMIN_TOKEN nor OUBLIETTE_ADMIN_TOKEN_SHA256 is set",
      "host token: neither OUBLIETTE_HOST_TOKEN nor OUBLIETTE_HOST_TOKEN_SHA256 is set",
    ]);
  });

  it("does not ask for OUBLIETTE_REQUEST_STATE_KEY (the Worker makes and keeps one)", () => {
    expect(checkDeploy(ready()).some((f) => f.what.includes("REQUEST_STATE_KEY"))).toBe(false);
  });

  it("are not reported when the listing was not asked for (a dry run)", () => {
    const findings = checkDeploy(ready({ secrets: { kind: "not_checked", reason: "dry run" } }));
    expect(findings.map((f) => f.what).some((w) => w.includes("token"))).toBe(false);
    expect(findings).toHaveLength(2);
  });

  it("give way to one finding when wrangler could not list them, with the way out", () => {
    const unavailable = (cause: "not_logged_in" | "offline" | "failed") =>
      checkDeploy(ready({ secrets: { kind: "unavailable", cause, detail: "Worker quota exceeded" } }));
    const notLoggedIn = finding(unavailable("not_logged_in"), "secrets could not be listed");
    expect(notLoggedIn).toMatchObject({ ok: false, what: expect.stringContaining("not logged in") });
    expect(notLoggedIn.fix).toContain("npx wrangler login");
    const offline = finding(unavailable("offline"), "secrets could not be listed");
    expect(offline).toMatchObject({ ok: false, what: expect.stringContaining("could not reach Cloudflare") });
    expect(offline.fix).toContain("network");
    const failed = finding(unavailable("failed"), "secrets could not be listed");
    expect(failed).toMatchObject({ ok: false, what: expect.stringContaining("Worker quota exceeded") });
    expect(failed.fix).toContain("npx wrangler secret list");
    expect(unavailable("failed").some((f) => f.what.includes("admin token"))).toBe(false);
  });
});

describe("OUBLIETTE_PUBLIC_ORIGINS", () => {
  const withOrigins = (value: unknown, varOverrides: Record<string, string> = {}) =>
    finding(
      checkDeploy(
        ready({
          config: { name: "oubliette-edge", vars: { OUBLIETTE_PUBLIC_ORIGINS: value } },
          varOverrides,
        }),
      ),
      "OUBLIETTE_PUBLIC_ORIGINS",
    );

  it("empty (as wrangler.toml ships it) or absent is missing, with the Worker's origin to set", () => {
    for (const f of [
      withOrigins(""),
      finding(checkDeploy(ready({ config: { name: "oubliette-edge" } })), "OUBLIETTE_PUBLIC_ORIGINS"),
    ]) {
      expect(f.ok).toBe(false);
      expect(f.what).toContain("is empty");
      expect(f.fix).toContain(
        `OUBLIETTE_PUBLIC_ORIGINS = "https://oubliette-edge.<your-subdomain>.workers.dev"`,
      );
      expect(f.fix).toContain("npm run deploy -- --var OUBLIETTE_PUBLIC_ORIGINS:https://");
    }
  });

  it("a --var sets it over wrangler.toml's", () => {
    expect(withOrigins("", { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN })).toEqual({
      what: `OUBLIETTE_PUBLIC_ORIGINS is ${ORIGIN} (--var)`,
      ok: true,
      fix: "",
    });
  });

  it("several origins, one of them https, will do", () => {
    expect(withOrigins(`${ORIGIN}, https://oubliette.example.com`).ok).toBe(true);
  });

  it("needs an https origin: http alone is missing", () => {
    const f = withOrigins("http://oubliette.example.com");
    expect(f.ok).toBe(false);
    expect(f.what).toContain("no https origin");
  });

  it("refuses what the Worker would refuse: a path, a non-origin, a non-string", () => {
    for (const value of [`${ORIGIN}/mcp`, "oubliette.example.com", `${ORIGIN},ftp://x.example`]) {
      const f = withOrigins(value);
      expect(f.ok, value).toBe(false);
      expect(f.what).toContain("not an origin");
    }
    expect(withOrigins(42).what).toContain("is not a string");
  });

  it("reads origins as the Worker does", async () => {
    // The Worker's own parser, loaded at run time: its module's types need workerd's, which this
    // project's typecheck does not load, so the path is not a literal tsc would follow.
    const envModule = resolve(ROOT, "worker/src/env.ts");
    const { config } = (await import(envModule)) as {
      config: (env: Record<string, string>) => { publicOrigins: string[] };
    };
    const examples = [
      "",
      ORIGIN,
      "HTTPS://Oubliette.Example.com:443",
      "https://a.example:8443, http://b.example",
      `${ORIGIN}/`,
      `${ORIGIN}/mcp`,
      `${ORIGIN}?x=1`,
      "https://user@a.example",
      "ftp://a.example",
      "a.example",
    ];
    for (const value of examples) {
      let worker: string[] | "refused";
      try {
        worker = config({ OUBLIETTE_PUBLIC_ORIGINS: value }).publicOrigins;
      } catch {
        worker = "refused";
      }
      const ours = parsePublicOrigins(value);
      expect(ours.invalid.length > 0 ? "refused" : ours.origins, value).toEqual(worker);
    }
  });
});

describe("the OAUTH_KV namespace", () => {
  const kv = (kv_namespaces: { binding: string; id?: string }[], overrides: Partial<DeployCheckInput> = {}) =>
    finding(
      checkDeploy(
        ready({
          config: { name: "oubliette-edge", vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN }, kv_namespaces },
          ...overrides,
        }),
      ),
      "OAUTH_KV",
    );

  it("with an id is bound to that namespace", () => {
    expect(kv([{ binding: "OAUTH_KV", id: "0f2a" }])).toEqual({
      what: "KV namespace OAUTH_KV is bound to namespace 0f2a",
      ok: true,
      fix: "",
    });
  });

  it("without an id is provisioned by wrangler deploy (4.45.0 and later)", () => {
    const f = kv([{ binding: "OAUTH_KV" }], { wranglerVersion: "4.45.0" });
    expect(f.ok).toBe(true);
    expect(f.what).toContain("wrangler deploy creates oubliette-edge-oauth-kv");
  });

  it("without an id and an older wrangler is missing, with the command that creates it", () => {
    const f = kv([{ binding: "OAUTH_KV" }], { wranglerVersion: "4.44.9" });
    expect(f.ok).toBe(false);
    expect(f.what).toContain("wrangler 4.44.9 cannot create it");
    expect(f.fix).toContain("npx wrangler kv namespace create oubliette-edge-oauth-kv");
  });

  it("without an id and provisioning turned off is missing", () => {
    const f = kv([{ binding: "OAUTH_KV" }], { provisioningDisabled: true });
    expect(f.ok).toBe(false);
    expect(f.fix).toContain("leave out --no-x-provision");
  });

  it("not bound at all is missing", () => {
    const f = kv([{ binding: "OTHER_KV" }]);
    expect(f.ok).toBe(false);
    expect(f.what).toContain("is not in wrangler.toml");
    expect(f.fix).toContain(`[[kv_namespaces]] binding = "OAUTH_KV"`);
  });

  it("compares versions numerically", () => {
    expect(versionAtLeast("4.86.0", "4.45.0")).toBe(true);
    expect(versionAtLeast("4.45.0", "4.45.0")).toBe(true);
    expect(versionAtLeast("4.9.0", "4.45.0")).toBe(false);
    expect(versionAtLeast("5.0.0-beta.1", "4.45.0")).toBe(true);
    expect(versionAtLeast("garbage", "4.45.0")).toBe(false);
  });
});

describe("--env", () => {
  it("checks that environment's own [vars] and kv_namespaces (wrangler does not inherit them)", () => {
    const config = {
      name: "oubliette-edge",
      vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN },
      kv_namespaces: [{ binding: "OAUTH_KV", id: "top" }],
      env: { staging: {} },
    };
    const findings = checkDeploy(ready({ config, envName: "staging" }));
    expect(finding(findings, "OUBLIETTE_PUBLIC_ORIGINS").ok).toBe(false);
    expect(finding(findings, "OAUTH_KV").ok).toBe(false);
  });

  it("names the environment's Worker <name>-<env>", () => {
    const config = {
      name: "oubliette-edge",
      env: {
        staging: { vars: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN }, kv_namespaces: [{ binding: "OAUTH_KV" }] },
      },
    };
    expect(finding(checkDeploy(ready({ config, envName: "staging" })), "OAUTH_KV").what).toContain(
      "oubliette-edge-staging-oauth-kv",
    );
  });

  it("an environment wrangler.toml does not have is the one finding", () => {
    const findings = checkDeploy(ready({ envName: "nope" }));
    expect(findings).toEqual([
      {
        what: "wrangler.toml has no [env.nope] for --env nope",
        ok: false,
        fix: "add an [env.nope] section to wrangler.toml, or leave out --env",
      },
    ]);
  });
});

describe("the repository's wrangler.toml", () => {
  const text = readFileSync(resolve(ROOT, "wrangler.toml"), "utf8");
  const packageJson = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };

  it("parses, and with the pinned wrangler needs only the secrets and the public origin", () => {
    const config = parseWranglerConfig(text, "wrangler.toml");
    const wrangler = packageJson.devDependencies.wrangler ?? "";
    const findings = checkDeploy(ready({ config, wranglerVersion: wrangler, secrets: listed() }));
    expect(findings.filter((f) => !f.ok).map((f) => f.what.split(":")[0])).toEqual([
      "admin token",
      "host token",
      "OUBLIETTE_PUBLIC_ORIGINS is empty",
    ]);
    expect(finding(findings, "OAUTH_KV").ok).toBe(true);
  });

  it("a broken file is a config_invalid error naming it", () => {
    const broken = () => parseWranglerConfig("name = \n", "wrangler.toml");
    expect(broken).toThrow(DeployError);
    expect(broken).toThrow(/wrangler\.toml is not valid TOML/);
    try {
      parseWranglerConfig('kv_namespaces = [{ id = "x" }]', "w.toml");
    } catch (err) {
      expect(err).toMatchObject({
        code: "config_invalid",
        message: expect.stringContaining("kv_namespaces.0.binding"),
      });
    }
    expect.assertions(3);
  });
});

describe("the command line", () => {
  it("passes everything but --skip-checks to wrangler deploy, --dry-run included", () => {
    expect(parseDeployArgs(["--dry-run", "--outdir", "/tmp/x"])).toEqual({
      dryRun: true,
      skipChecks: false,
      wranglerArgs: ["--dry-run", "--outdir", "/tmp/x"],
      varOverrides: {},
      provisioningDisabled: false,
    });
    expect(parseDeployArgs(["--skip-checks", "--", "--minify"])).toMatchObject({
      skipChecks: true,
      wranglerArgs: ["--minify"],
    });
  });

  it("reads the wrangler flags that change what is deployed", () => {
    const args = parseDeployArgs([
      "--env=staging",
      "--name",
      "edge2",
      "-c",
      "other.toml",
      "--var",
      `OUBLIETTE_PUBLIC_ORIGINS:${ORIGIN}`,
      "A:1:2",
      "--var=B:",
      "--no-x-provision",
    ]);
    expect(args).toMatchObject({
      envName: "staging",
      name: "edge2",
      configPath: "other.toml",
      varOverrides: { OUBLIETTE_PUBLIC_ORIGINS: ORIGIN, A: "1:2", B: "" },
      provisioningDisabled: true,
    });
  });

  it("refuses a flag without its value, and a --var without KEY:VALUE", () => {
    expect(() => parseDeployArgs(["--env"])).toThrow(expect.objectContaining({ code: "bad_arguments" }));
    expect(() => parseDeployArgs(["--var", "NOCOLON"])).toThrow(/expected KEY:VALUE/);
  });
});

describe("wrangler secret list", () => {
  it("answers the names of the secrets", () => {
    const stdout = JSON.stringify([
      { name: "OUBLIETTE_ADMIN_TOKEN", type: "secret_text" },
      { name: "OUBLIETTE_HOST_TOKEN", type: "secret_text" },
    ]);
    expect(parseSecretList(stdout)).toEqual(["OUBLIETTE_ADMIN_TOKEN", "OUBLIETTE_HOST_TOKEN"]);
    expect(parseSecretList("[]\n")).toEqual([]);
    expect(parseSecretList("nothing")).toBeNull();
    expect(parseSecretList('[{"nom": 1}]')).toBeNull();
  });

  // Error output as wrangler 4.86 prints it (colours included).
  it("not signed in is not_logged_in", () => {
    const stderr =
      "\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1mIn a non-interactive environment, it's necessary to set a CLOUDFLARE_API_TOKEN environment variable for wrangler to work.\x1b[0m\n";
    expect(listingFromFailure(stderr)).toMatchObject({
      kind: "unavailable",
      cause: "not_logged_in",
      detail: expect.stringMatching(/^In a non-interactive environment/),
    });
  });

  it("no network is offline", () => {
    const stderr =
      "▲ [WARNING] A fetch request failed, likely due to a connectivity issue.\n\n✘ [ERROR] fetch failed\n";
    expect(listingFromFailure(stderr)).toEqual({
      kind: "unavailable",
      cause: "offline",
      detail: "fetch failed",
    });
  });

  it("a Worker not deployed yet has no secrets (a first deploy)", () => {
    const stderr = `✘ [ERROR] Worker "oubliette-edge" not found.\n\nIf this is a new Worker, run \`wrangler deploy\` first to create it.\n`;
    expect(listingFromFailure(stderr)).toEqual({ kind: "listed", names: [], workerExists: false });
  });

  it("anything else is failed, with wrangler's own error line", () => {
    expect(listingFromFailure("✘ [ERROR] More than one account available\n")).toEqual({
      kind: "unavailable",
      cause: "failed",
      detail: "More than one account available",
    });
  });
});

describe("the report", () => {
  it("is one line per finding: ✓ what, or ✗ what — fix", () => {
    expect(formatFinding({ what: "a", ok: true, fix: "" })).toBe("✓ a");
    expect(formatFinding({ what: "b", ok: false, fix: "do c" })).toBe("✗ b — do c");
  });
});
