/**
 * Which remotes the host's git may reach (docs/git.md). The host has a network the containers do
 * not, so a project's remote is checked before any git runs: `https://` and `ssh://` only, to
 * public addresses. `http://`, `file://` (another project's workspace is a path on this host),
 * and loopback, private, link-local or otherwise special addresses only when the host allows
 * local remotes (`--git-allow-local-remotes`; tests and single-machine setups). A hostname is
 * resolved and every address it has is checked. git itself is told to follow no redirect.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { HostError } from "../projects/errors.js";

export type GitProtocol = "https" | "ssh" | "http" | "file";

export interface RemotePolicy {
  /** Allow http://, file:// and non-public addresses. */
  allowLocal: boolean;
  /** Resolves a hostname to its addresses (default: the system resolver). */
  lookup?: (host: string) => Promise<string[]>;
}

export interface CheckedRemote {
  protocol: GitProtocol;
  /** The URL's origin (scheme, host, port), for credentials scoped to it; null for file://. */
  origin: string | null;
}

const ALLOW_HINT = "(a host may allow them with --git-allow-local-remotes)";

async function systemLookup(host: string): Promise<string[]> {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

function refuse(url: string, why: string): never {
  throw new HostError("invalid", `remote ${url} is refused: ${why}`);
}

/** Whether an address is an ordinary public one (not loopback, private, link-local, …). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === "unicast";
}

/** Checks `url` against the policy; throws a HostError saying why it is refused. */
export async function checkRemote(url: string, policy: RemotePolicy): Promise<CheckedRemote> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse(url, "it is not a URL");
  }
  const protocol = parsed.protocol.slice(0, -1);
  if (protocol !== "https" && protocol !== "ssh" && protocol !== "http" && protocol !== "file")
    return refuse(url, "only https:// and ssh:// remotes are allowed");
  // ssh names its user in the URL (git@…); a password, or any user of an http(s) URL, is a secret.
  if (parsed.password !== "" || (parsed.username !== "" && protocol !== "ssh"))
    return refuse(url, "a remote URL may not carry a user or password; name a git_credential instead");
  if ((protocol === "http" || protocol === "file") && !policy.allowLocal)
    return refuse(url, `only https:// and ssh:// remotes are allowed here ${ALLOW_HINT}`);
  if (protocol === "file") return { protocol, origin: null };
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  if (!policy.allowLocal) {
    const addresses = ipaddr.isValid(host)
      ? [host]
      : host === "localhost" || host.endsWith(".localhost")
        ? ["127.0.0.1"]
        : await (policy.lookup ?? systemLookup)(host).catch(() => refuse(url, `${host} cannot be resolved`));
    if (addresses.length === 0) refuse(url, `${host} has no address`);
    const special = addresses.find((a) => !isPublicAddress(a));
    if (special !== undefined)
      refuse(
        url,
        `${host} is a loopback, private or otherwise non-public address (${special}) ${ALLOW_HINT}`,
      );
  }
  return { protocol, origin: parsed.origin };
}
