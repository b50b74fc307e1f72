/**
 * The parts of wrangler.toml the deploy checks read, parsed at the boundary (smol-toml, then zod),
 * and what a `wrangler deploy [--env NAME]` takes from them.
 */
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";
import { DeployError } from "./errors.js";

const KvNamespaceSchema = z.looseObject({
  binding: z.string().min(1),
  /** Absent: wrangler provisions the namespace on deploy (see check-oauth-kv.ts). */
  id: z.string().min(1).optional(),
});

/** A deployable section: the top level, or one `[env.NAME]`. Everything else is wrangler's business. */
const SectionSchema = z.looseObject({
  name: z.string().min(1).optional(),
  /** wrangler allows JSON values in [vars]; the Worker's settings are all strings. */
  vars: z.record(z.string(), z.unknown()).optional(),
  kv_namespaces: z.array(KvNamespaceSchema).optional(),
});

const WranglerConfigSchema = SectionSchema.extend({
  env: z.record(z.string(), SectionSchema).optional(),
});
export type WranglerConfig = z.infer<typeof WranglerConfigSchema>;
export type KvNamespace = z.infer<typeof KvNamespaceSchema>;

/** Parses wrangler.toml's text; `source` names the file in the error. */
export function parseWranglerConfig(text: string, source: string): WranglerConfig {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    const detail = err instanceof TomlError ? err.message.split("\n")[0] : String(err);
    throw new DeployError("config_invalid", `${source} is not valid TOML: ${detail}`);
  }
  const parsed = WranglerConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DeployError("config_invalid", `${source}: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}

/** What one deploy uploads, as wrangler resolves it. */
export interface DeployTarget {
  /** The Worker's name (`<name>-<env>` for an environment without a name of its own). */
  name: string;
  vars: Record<string, unknown>;
  kvNamespaces: KvNamespace[];
}

/**
 * The section `wrangler deploy [--env envName]` deploys, or null when wrangler.toml has no such
 * environment. `vars` and `kv_namespaces` are not inherited by an environment (wrangler's rule),
 * so an [env.NAME] without them deploys none.
 */
export function deployTarget(
  config: WranglerConfig,
  envName: string | undefined,
  nameOverride?: string,
): DeployTarget | null {
  // wrangler itself refuses a deploy without a name; the placeholder only shapes fix texts.
  const base = nameOverride ?? config.name ?? "<worker name>";
  if (envName === undefined)
    return { name: base, vars: config.vars ?? {}, kvNamespaces: config.kv_namespaces ?? [] };
  const section = config.env?.[envName];
  if (!section) return null;
  return {
    name: nameOverride ?? section.name ?? `${base}-${envName}`,
    vars: section.vars ?? {},
    kvNamespaces: section.kv_namespaces ?? [],
  };
}
