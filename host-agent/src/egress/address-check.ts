/**
 * Where a request through the egress gate may go, decided before any packet is sent: the gate
 * resolves the name itself, keeps only ordinary public addresses (never loopback, private,
 * link-local — cloud metadata included —, unique-local, carrier-grade NAT, multicast, reserved,
 * NAT64/6to4/Teredo forms that embed another address, nor one of this host's own addresses),
 * and hands back the one address it will connect to, so no second lookup can point elsewhere
 * (DNS rebinding). Whatever a project's policy says, these refusals stand.
 *
 * The one exception is for tests on a single machine: names the host-agent was started with
 * (`--egress-test-resolve name=address`, refused unless its Worker is on loopback) resolve to
 * that address, and only those names may reach it.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import ipaddr from "ipaddr.js";
import { normalizeHost } from "../../../protocol/network.js";

/** Resolves a name to its addresses (the system resolver by default). */
export type Resolver = (host: string) => Promise<string[]>;

export interface AddressPolicy {
  resolve: Resolver;
  /** Names mapped to an address by the test flag: they resolve there and bypass the address rules. */
  testNames: ReadonlyMap<string, string>;
  /** This host's own addresses (its interfaces): refused even when public. */
  ownAddresses: () => ReadonlySet<string>;
  /** How long a lookup may take. */
  lookupTimeoutMs: number;
}

export type AddressVerdict = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

/** The system resolver: every address the name has, in the resolver's order. */
export const systemResolver: Resolver = async (host) => {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
};

/** The production policy: the system resolver, no test names, this host's interfaces (re-read every 30 s). */
export function defaultAddressPolicy(testNames: ReadonlyMap<string, string> = new Map()): AddressPolicy {
  let own = interfaceAddresses();
  let readAt = Date.now();
  return {
    resolve: systemResolver,
    testNames,
    ownAddresses: () => {
      if (Date.now() - readAt > 30_000) {
        own = interfaceAddresses();
        readAt = Date.now();
      }
      return own;
    },
    lookupTimeoutMs: 5_000,
  };
}

/** The addresses of this host's interfaces, normalized. */
export function interfaceAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) own.add(normalizeAddress(entry.address));
  }
  return own;
}

/** An address in one spelling (IPv4-mapped IPv6 as IPv4), so sets and comparisons agree. */
export function normalizeAddress(address: string): string {
  const bare = address.replace(/%.*$/, "");
  if (!ipaddr.isValid(bare)) return bare;
  let parsed = ipaddr.parse(bare);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.toNormalizedString();
}

/**
 * What kind of address this is when it may not be reached (`loopback`, `private`, `linkLocal`,
 * …, or `own` for this host's), or null when it is an ordinary public one.
 */
export function forbiddenKind(address: string, own: ReadonlySet<string>): string | null {
  const bare = address.replace(/%.*$/, "");
  if (!ipaddr.isValid(bare)) return "invalid";
  let parsed = ipaddr.parse(bare);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  if (range !== "unicast") return range;
  if (own.has(parsed.toNormalizedString())) return "own";
  return null;
}

const KIND_WORDS: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private address",
  linkLocal: "a link-local address (cloud metadata lives there)",
  uniqueLocal: "a unique-local address",
  carrierGradeNat: "a carrier-grade NAT address",
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
  own: "one of this host's own addresses",
};

function words(kind: string): string {
  return KIND_WORDS[kind] ?? `a special-purpose address (${kind})`;
}

/** Decides where `host` may be reached: one checked address, or why not. Never connects. */
export async function checkDestination(host: string, policy: AddressPolicy): Promise<AddressVerdict> {
  const name = normalizeHost(host);
  const mapped = policy.testNames.get(name);
  if (mapped !== undefined) return { ok: true, address: mapped, family: familyOf(mapped) };
  const own = policy.ownAddresses();
  if (isAddressLiteral(name)) {
    const kind = forbiddenKind(name, own);
    if (kind !== null)
      return { ok: false, reason: `${name} is ${words(kind)}, which the gate never reaches` };
    const address = normalizeAddress(name);
    return { ok: true, address, family: familyOf(address) };
  }
  if (name === "localhost" || name.endsWith(".localhost"))
    return { ok: false, reason: `${name} is this machine (loopback), which the gate never reaches` };
  let addresses: string[];
  try {
    addresses = await withTimeout(policy.resolve(name), policy.lookupTimeoutMs);
  } catch (err) {
    return {
      ok: false,
      reason: `${name} could not be resolved: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (addresses.length === 0) return { ok: false, reason: `${name} has no address` };
  // Every address must be public: a name that also answers a private one is refused outright,
  // rather than trusted to have been honest about the first.
  for (const address of addresses) {
    const kind = forbiddenKind(address, own);
    if (kind !== null)
      return {
        ok: false,
        reason: `${name} resolves to ${address}, ${words(kind)}, which the gate never reaches`,
      };
  }
  const address = normalizeAddress(addresses[0] as string);
  return { ok: true, address, family: familyOf(address) };
}

/**
 * Whether a host is an address (in any spelling ipaddr.js reads, `0x7f.1` too: such a host is
 * checked as the address it is, never looked up). Told first by its characters: a name with any
 * other letter is none, and needs no parse (ipaddr.js throws inside a failed one, on every request).
 */
function isAddressLiteral(name: string): boolean {
  if (!name.includes(":") && !/^[0-9a-fx.]+$/.test(name)) return false;
  return ipaddr.isValid(name);
}

/** 6 for an IPv6 address, else 4 (Node's own check: no parse, no exception). */
function familyOf(address: string): 4 | 6 {
  return isIP(address) === 6 ? 6 : 4;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
