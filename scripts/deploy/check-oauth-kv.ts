/**
 * OAUTH_KV, the KV namespace OAuth sign-in keeps its clients and grants in. wrangler.toml names the
 * binding without an id on purpose: since wrangler 4.45.0, `wrangler deploy` provisions a binding
 * that has no id (automatic resource provisioning, on by default; `--no-x-provision` turns it
 * off). On the first deploy it creates the namespace `<worker>-oauth-kv`, and later deploys keep the
 * namespace the Worker is already bound to, so no id has to be copied into wrangler.toml.
 */
import { type Finding, found, missing } from "./finding.js";
import type { KvNamespace } from "./wrangler-config.js";

const BINDING = "OAUTH_KV";
/** The first wrangler that provisions KV namespaces on deploy (changelog of 2025-10-24). */
export const PROVISIONING_SINCE = "4.45.0";

export interface OauthKvInput {
  kvNamespaces: readonly KvNamespace[];
  /** The version of the wrangler that will deploy (node_modules/wrangler/package.json). */
  wranglerVersion: string;
  /** `--no-x-provision` or its spellings among the deploy's arguments. */
  provisioningDisabled: boolean;
  workerName: string;
}

/** Whether `version` (x.y.z, any suffix ignored) is at least `since`. */
export function versionAtLeast(version: string, since: string): boolean {
  const parts = (v: string) => (/^(\d+)\.(\d+)\.(\d+)/.exec(v) ?? []).slice(1).map(Number);
  const a = parts(version);
  const b = parts(since);
  if (a.length !== 3 || b.length !== 3) return false;
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

export function checkOauthKv(input: OauthKvInput): Finding {
  const binding = input.kvNamespaces.find((kv) => kv.binding === BINDING);
  const create = `npx wrangler kv namespace create ${input.workerName}-oauth-kv, then put its id in wrangler.toml: [[kv_namespaces]] binding = "${BINDING}" id = "<id>"`;
  if (!binding)
    return missing(
      `KV namespace binding ${BINDING} is not in wrangler.toml (OAuth sign-in keeps its clients and grants there)`,
      `add [[kv_namespaces]] binding = "${BINDING}" to wrangler.toml (wrangler deploy creates the namespace), or ${create}`,
    );
  if (binding.id) return found(`KV namespace ${BINDING} is bound to namespace ${binding.id}`);
  if (input.provisioningDisabled)
    return missing(
      `KV namespace ${BINDING} has no id and automatic provisioning is turned off (--no-x-provision)`,
      `leave out --no-x-provision, or ${create}`,
    );
  if (!versionAtLeast(input.wranglerVersion, PROVISIONING_SINCE))
    return missing(
      `KV namespace ${BINDING} has no id and wrangler ${input.wranglerVersion} cannot create it (provisioning needs ${PROVISIONING_SINCE} or later)`,
      `npm ci (package.json pins a newer wrangler), or ${create}`,
    );
  return found(
    `KV namespace ${BINDING}: no id, so wrangler deploy creates ${input.workerName}-oauth-kv the first time and keeps the Worker's namespace after`,
  );
}
