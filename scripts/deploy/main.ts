/**
 * `npm run deploy`: checks what a Cloudflare deploy of the Worker needs (check-deploy.ts), prints
 * one line per finding (✓/✗ what — fix), and runs `wrangler deploy` only when nothing is missing.
 *
 *   npm run deploy                     check, then deploy
 *   npm run deploy -- --dry-run        check what needs no account, then `wrangler deploy --dry-run`
 *   npm run deploy -- --skip-checks    deploy without checking
 *
 * Every other argument goes to `wrangler deploy` (deploy-args.ts). Exit code: 1 when something is
 * missing or the checks cannot run, otherwise wrangler's. OUBLIETTE_DEBUG=1 adds stack traces.
 */
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkDeploy } from "./check-deploy.js";
import { type DeployArgs, parseDeployArgs } from "./deploy-args.js";
import { DeployError } from "./errors.js";
import { formatFinding } from "./finding.js";
import type { SecretListing } from "./secret-listing.js";
import { listSecrets, runDeploy, wranglerVersion } from "./wrangler-cli.js";
import { deployTarget, parseWranglerConfig, type WranglerConfig } from "./wrangler-config.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const say = (line: string) => process.stdout.write(`${line}\n`);
const complain = (line: string) => process.stderr.write(`${line}\n`);

async function main(argv: readonly string[]): Promise<number> {
  const args = parseDeployArgs(argv);
  if (args.skipChecks) {
    say("oubliette: --skip-checks: running wrangler deploy without checking what it needs");
    return runDeploy(root, args.wranglerArgs);
  }
  const config = readConfig(args.configPath);
  const secrets = await secretListing(args, config);
  const findings = checkDeploy({
    config,
    envName: args.envName,
    nameOverride: args.name,
    varOverrides: args.varOverrides,
    secrets,
    wranglerVersion: wranglerVersion(),
    provisioningDisabled: args.provisioningDisabled,
  });
  say("oubliette: what the deploy needs:");
  for (const finding of findings) say(formatFinding(finding));
  if (secrets.kind === "not_checked") say(`- secrets not checked: ${secrets.reason}`);
  const missing = findings.filter((f) => !f.ok).length;
  if (missing > 0 && !args.dryRun) {
    say(
      `oubliette: ${missing} to fix, nothing deployed; fix ${missing === 1 ? "it" : "them"} as shown and run npm run deploy again (--skip-checks deploys anyway)`,
    );
    return 1;
  }
  if (missing > 0) say(`oubliette: ${missing} to fix: a real deploy would stop here; the dry run goes on`);
  say(`oubliette: running wrangler deploy${args.dryRun ? " --dry-run (nothing is uploaded)" : ""}`);
  return runDeploy(root, args.wranglerArgs);
}

function readConfig(configPath: string | undefined): WranglerConfig {
  const path = resolve(root, configPath ?? "wrangler.toml");
  const shown = relative(root, path) || path;
  // wrangler also takes JSON configs; the checks read only TOML, which is what this repository has.
  if (!path.endsWith(".toml"))
    throw new DeployError(
      "config_invalid",
      `${shown}: the deploy checks read a TOML config only (or use --skip-checks)`,
    );
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new DeployError("config_unreadable", `cannot read ${shown}: ${(err as Error).message}`);
  }
  return parseWranglerConfig(text, shown);
}

/** The Worker's secrets, which only the Cloudflare account knows; a dry run does not ask. */
async function secretListing(args: DeployArgs, config: WranglerConfig): Promise<SecretListing> {
  if (args.dryRun)
    return { kind: "not_checked", reason: "--dry-run uploads nothing and needs no Cloudflare account" };
  // checkDeploy reports the missing environment; there is no Worker to ask about.
  if (deployTarget(config, args.envName, args.name) === null)
    return { kind: "not_checked", reason: `there is no environment ${args.envName} to deploy` };
  // The same Worker the deploy targets: its environment, name and config file.
  const selectors: string[] = [];
  if (args.envName !== undefined) selectors.push("--env", args.envName);
  if (args.name !== undefined) selectors.push("--name", args.name);
  if (args.configPath !== undefined) selectors.push("--config", args.configPath);
  say("oubliette: asking wrangler for the Worker's secrets (wrangler secret list)");
  return listSecrets(root, selectors);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof DeployError) complain(`oubliette: ${err.message}`);
    else complain(`oubliette: deploy failed: ${err instanceof Error ? err.message : String(err)}`);
    if (process.env.OUBLIETTE_DEBUG === "1" && err instanceof Error && err.stack) complain(err.stack);
    process.exit(1);
  },
);
