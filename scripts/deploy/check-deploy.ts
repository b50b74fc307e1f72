/**
 * What a Cloudflare deploy of the Worker needs, checked before `wrangler deploy` runs: the tokens
 * (check-secrets.ts), OUBLIETTE_PUBLIC_ORIGINS (check-public-origins.ts) and the OAUTH_KV namespace
 * (check-oauth-kv.ts). Pure: main.ts gathers the input (wrangler.toml, the secrets wrangler
 * lists, the command line) and prints the findings.
 */
import { checkOauthKv } from "./check-oauth-kv.js";
import { checkPublicOrigins } from "./check-public-origins.js";
import { checkSecrets } from "./check-secrets.js";
import { type Finding, missing } from "./finding.js";
import type { SecretListing } from "./secret-listing.js";
import { deployTarget, type WranglerConfig } from "./wrangler-config.js";

export interface DeployCheckInput {
  /** wrangler.toml, parsed (wrangler-config.ts). */
  config: WranglerConfig;
  /** `--env NAME`: deploy that environment's section instead of the top level. */
  envName?: string;
  /** `--name NAME`: the Worker's name instead of wrangler.toml's. */
  nameOverride?: string;
  /** `--var KEY:VALUE` overrides, applied over the section's [vars] as wrangler applies them. */
  varOverrides: Record<string, string>;
  /** The Worker's secrets as wrangler listed them, or why they are not known. */
  secrets: SecretListing;
  /** The version of the wrangler that deploys. */
  wranglerVersion: string;
  /** Whether the deploy's arguments turn automatic resource provisioning off. */
  provisioningDisabled: boolean;
}

export function checkDeploy(input: DeployCheckInput): Finding[] {
  const target = deployTarget(input.config, input.envName, input.nameOverride);
  if (target === null)
    return [
      missing(
        `wrangler.toml has no [env.${input.envName}] for --env ${input.envName}`,
        `add an [env.${input.envName}] section to wrangler.toml, or leave out --env`,
      ),
    ];
  const vars = { ...target.vars, ...input.varOverrides };
  return [
    ...checkSecrets({ secrets: input.secrets, vars, envName: input.envName }),
    checkPublicOrigins({
      vars,
      fromFlag: "OUBLIETTE_PUBLIC_ORIGINS" in input.varOverrides,
      workerName: target.name,
    }),
    checkOauthKv({
      kvNamespaces: target.kvNamespaces,
      wranglerVersion: input.wranglerVersion,
      provisioningDisabled: input.provisioningDisabled,
      workerName: target.name,
    }),
  ];
}
