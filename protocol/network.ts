/**
 * A project's (or a session's) network policy: which hosts its agents and commands may reach
 * through the host's egress gate. The one definition of the policy's shape and of how it decides;
 * the Worker validates and stores it, the host-agent's gate applies it. Addresses are not judged
 * here: whatever a policy allows, the gate still refuses loopback, private, link-local,
 * unique-local and the host's own addresses (host-agent/src/egress/address-check.ts).
 */
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { NETWORK_PRESET_NAMES, NETWORK_PRESETS } from "./network-presets.js";

export { NETWORK_PRESET_NAMES, NETWORK_PRESETS, type NetworkPresetName } from "./network-presets.js";

/**
 * `off`: nothing (the container has no network; the gate refuses every request, saying why);
 * `allowlist`: the hosts of `allow` and `presets`; `open`: any public address.
 */
export const NetworkModeSchema = z.enum(["off", "allowlist", "open"]);
export type NetworkMode = z.infer<typeof NetworkModeSchema>;

/** Methods a policy may limit plain-HTTP requests to; `CONNECT` stands for an HTTPS tunnel. */
export const HTTP_METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "CONNECT"] as const;
export const HttpMethodSchema = z.enum(HTTP_METHODS);
export type HttpMethod = z.infer<typeof HttpMethodSchema>;

/** Most `allow` entries one policy holds. */
export const MAX_NETWORK_ALLOW = 256;

/** One parsed `allow` entry: a host (or `*.` a domain's subdomains), and a port (null: any). */
export interface HostPattern {
  host: string;
  /** `*.example.com`: subdomains of `host`, never `host` itself. */
  subdomains: boolean;
  port: number | null;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Parses an `allow` entry (`host`, `*.domain`, either with `:port`; IPv6 in brackets); a string says what is wrong. */
export function parseHostPattern(entry: string): HostPattern | string {
  const text = entry.trim().toLowerCase();
  if (text === "") return "an empty host";
  let host = text;
  let portText: string | null = null;
  const bracketed = /^\[([0-9a-f:.]+)\](?::(.*))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] ?? "";
    portText = bracketed[2] ?? null;
    if (!ipaddr.IPv6.isValid(host)) return `${entry} is not an IPv6 address in brackets`;
  } else {
    const colon = text.lastIndexOf(":");
    if (colon !== -1) {
      if (text.indexOf(":") !== colon) return `${entry}: write an IPv6 address in brackets, as [::1]:443`;
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
    }
  }
  let port: number | null = null;
  if (portText !== null) {
    if (!/^\d{1,5}$/.test(portText)) return `${entry}: the port is not a number`;
    port = Number(portText);
    if (port < 1 || port > 65_535) return `${entry}: a port is 1-65535, not ${port}`;
  }
  const subdomains = host.startsWith("*.");
  if (subdomains) host = host.slice(2);
  if (host.includes("*")) return `${entry}: a wildcard may only open the name, as *.example.com`;
  if (bracketed) return { host, subdomains: false, port };
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) {
    if (subdomains) return `${entry}: an address has no subdomains`;
    return { host, subdomains: false, port };
  }
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (name.length > 253 || !name.split(".").every((label) => LABEL.test(label)))
    return `${entry} is not a host name (letters, digits and '-' in dot-separated labels)`;
  if (subdomains && !name.includes("."))
    return `${entry}: *. opens the subdomains of a domain, as *.example.com`;
  return { host: name, subdomains, port };
}

/** An `allow` entry, checked as it enters (the message names what is wrong). */
export const HostPatternSchema = z
  .string()
  .max(300)
  .superRefine((entry, ctx) => {
    const parsed = parseHostPattern(entry);
    if (typeof parsed === "string") ctx.addIssue({ code: "custom", message: parsed });
  })
  .describe(
    "A host (registry.npmjs.org), *.domain for its subdomains only, either with :port (any port without).",
  );

export const NetworkPolicySchema = z
  .strictObject({
    mode: NetworkModeSchema.describe(
      "off (no network), allowlist (allow and presets), open (any public address).",
    ),
    allow: z
      .array(HostPatternSchema)
      .max(MAX_NETWORK_ALLOW, `at most ${MAX_NETWORK_ALLOW} allow entries`)
      .default([])
      .describe("Hosts the allowlist opens."),
    presets: z
      .array(z.enum(NETWORK_PRESET_NAMES))
      .max(NETWORK_PRESET_NAMES.length)
      .default([])
      .describe(
        `Named host lists the allowlist opens too: ${NETWORK_PRESET_NAMES.join(", ")} (project options lists them).`,
      ),
    methods: z
      .array(HttpMethodSchema)
      .min(1)
      .max(HTTP_METHODS.length)
      .optional()
      .describe(
        "Only these methods of plain-HTTP requests pass (absent: any); CONNECT stands for HTTPS tunnels, whose requests the gate cannot see.",
      ),
  })
  .describe("Which hosts agents and commands may reach through the host's gate.");
export type NetworkPolicy = z.infer<typeof NetworkPolicySchema>;
export type NetworkPolicyInput = z.input<typeof NetworkPolicySchema>;

/** A project's network when it names none: off, as a container has always been. */
export const DEFAULT_NETWORK_POLICY: NetworkPolicy = { mode: "off", allow: [], presets: [] };
/** What setup commands may reach when the project names nothing: the package registries. */
export const DEFAULT_SETUP_NETWORK_POLICY: NetworkPolicy = {
  mode: "allowlist",
  allow: [],
  presets: ["package-registries"],
};

/** Whose policy a verdict comes from (said in every refusal). */
export const PolicySourceSchema = z.enum(["project", "session", "setup"]);
export type PolicySource = z.infer<typeof PolicySourceSchema>;

/** A policy with whose it is. */
export interface SourcedPolicy {
  source: PolicySource;
  policy: NetworkPolicy;
}

/** What a request wants to reach: a host name or address, a port, and its method (`CONNECT` for a tunnel). */
export interface NetworkTarget {
  host: string;
  port: number;
  method: string;
}

/** Why a policy refused: `off`, a host it does not list (a person may be asked), a method it does not allow. */
export const NetworkRefusalCodeSchema = z.enum([
  "off",
  "not_listed",
  "method",
  "address",
  "approval",
  "limit",
  "credential",
]);
export type NetworkRefusalCode = z.infer<typeof NetworkRefusalCodeSchema>;

export type NetworkVerdict =
  | { allowed: true; rule: string }
  | { allowed: false; code: NetworkRefusalCode; reason: string; source: PolicySource };

/** The host as policies compare it: lower case, no trailing dot, an IPv6 address without brackets. */
export function normalizeHost(host: string): string {
  const bare = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1");
  return bare.endsWith(".") ? bare.slice(0, -1) : bare;
}

/**
 * An address's one spelling (IPv4 in four decimal parts, IPv6 however written), or null for a
 * name. A name is told by its characters alone: it is what nearly every request carries, and a
 * failed parse costs (ipaddr.js throws inside). Other spellings of IPv4 (`2130706433`) count as
 * names here: an `allow` entry names an address in four parts, and covers that spelling alone.
 */
function addressForm(host: string): string | null {
  if (!host.includes(":") && !/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return null;
  return ipaddr.isValid(host) ? ipaddr.parse(host).toNormalizedString() : null;
}

const patternAddresses = new WeakMap<HostPattern, string | null>();

/** addressForm of a pattern's host, worked out once per pattern. */
function patternAddress(pattern: HostPattern): string | null {
  let address = patternAddresses.get(pattern);
  if (address === undefined) {
    address = addressForm(pattern.host);
    patternAddresses.set(pattern, address);
  }
  return address;
}

/** Whether `pattern` covers `host:port` (host normalized). */
export function patternCovers(pattern: HostPattern, host: string, port: number): boolean {
  if (pattern.port !== null && pattern.port !== port) return false;
  if (pattern.subdomains) return host.endsWith(`.${pattern.host}`);
  const address = patternAddress(pattern);
  if (address !== null) return address === addressForm(host);
  return pattern.host === host;
}

const parsedPatterns = new WeakMap<NetworkPolicy, { text: string; pattern: HostPattern }[]>();

/**
 * The `allow` entries and every preset's hosts of a policy, parsed once per policy object (bad
 * entries, which validation refuses, are skipped).
 */
export function policyPatterns(policy: NetworkPolicy): { text: string; pattern: HostPattern }[] {
  const known = parsedPatterns.get(policy);
  if (known) return known;
  const texts = [...policy.allow, ...policy.presets.flatMap((name) => NETWORK_PRESETS[name].hosts)];
  const patterns: { text: string; pattern: HostPattern }[] = [];
  for (const text of texts) {
    const pattern = parseHostPattern(text);
    if (typeof pattern !== "string") patterns.push({ text, pattern });
  }
  parsedPatterns.set(policy, patterns);
  return patterns;
}

const OWNER: Record<PolicySource, string> = {
  project: "the project's",
  session: "the session's",
  setup: "the project's setup",
};

/** What one policy says of a request. */
export function evaluateNetworkPolicy(sourced: SourcedPolicy, target: NetworkTarget): NetworkVerdict {
  const { source, policy } = sourced;
  const host = normalizeHost(target.host);
  const where = `${host}:${target.port}`;
  const refuse = (code: NetworkRefusalCode, reason: string): NetworkVerdict => ({
    allowed: false,
    code,
    reason,
    source,
  });
  if (policy.mode === "off") return refuse("off", `${OWNER[source]} network policy is off`);
  const method = target.method.toUpperCase();
  if (policy.methods !== undefined && !(policy.methods as readonly string[]).includes(method)) {
    const what = method === "CONNECT" ? "an HTTPS tunnel (CONNECT)" : `a ${method} request`;
    return refuse(
      "method",
      `${OWNER[source]} network policy allows only ${policy.methods.join(", ")}: ${what} to ${where} is not`,
    );
  }
  if (policy.mode === "open") return { allowed: true, rule: "open" };
  const match = policyPatterns(policy).find(({ pattern }) => patternCovers(pattern, host, target.port));
  if (match) return { allowed: true, rule: match.text };
  return refuse("not_listed", `${where} is not in ${OWNER[source]} network allowlist`);
}

/** Every policy must allow a request (the stricter wins); the first refusal is the verdict. */
export function evaluateNetwork(policies: readonly SourcedPolicy[], target: NetworkTarget): NetworkVerdict {
  let allowed: NetworkVerdict = { allowed: true, rule: "" };
  for (const sourced of policies) {
    const verdict = evaluateNetworkPolicy(sourced, target);
    if (!verdict.allowed) return verdict;
    allowed = verdict;
  }
  if (policies.length === 0)
    return { allowed: false, code: "off", reason: "no network policy applies", source: "project" };
  return allowed;
}

/** The subject an approval of kind `network` is matched on: `host:port`. */
export function networkSubject(host: string, port: number): string {
  const bare = normalizeHost(host);
  return bare.includes(":") ? `[${bare}]:${port}` : `${bare}:${port}`;
}

/** A host added to an allowlist by an `allow_project` answer: `host:port`, as an `allow` entry. */
export function allowEntry(host: string, port: number): string {
  return networkSubject(host, port);
}
