/**
 * Where the egress gate never connects, decided on addresses before any packet is sent: loopback,
 * private, link-local (cloud metadata), unique-local, carrier-grade NAT, special ranges that embed
 * another address, and this host's own addresses — as literals, and as what a name resolves to
 * (a stub resolver: no lookup leaves this process, no packet leaves this machine). A name that
 * answers a public address and then a private one is looked up once: the gate keeps the address
 * it checked (DNS rebinding), and a name with any private address is refused outright.
 */
import { describe, expect, it } from "vitest";
import {
  type AddressPolicy,
  checkDestination,
  forbiddenKind,
  type Resolver,
} from "../../host-agent/src/egress/address-check.js";

const OWN = new Set(["93.184.216.99"]);

function policy(resolve: Resolver, testNames: Record<string, string> = {}): AddressPolicy {
  return {
    resolve,
    testNames: new Map(Object.entries(testNames)),
    ownAddresses: () => new Set(["93.184.216.100"]),
    lookupTimeoutMs: 500,
  };
}

/** A resolver that answers from a table and counts its lookups. */
function stubResolver(table: Record<string, string[][]>): Resolver & { lookups: string[] } {
  const lookups: string[] = [];
  const served = new Map<string, number>();
  const resolve = (async (host: string) => {
    lookups.push(host);
    const answers = table[host];
    if (answers === undefined) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    const n = served.get(host) ?? 0;
    served.set(host, n + 1);
    return answers[Math.min(n, answers.length - 1)] ?? [];
  }) as Resolver & { lookups: string[] };
  resolve.lookups = lookups;
  return resolve;
}

describe("addresses the gate never reaches", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.254", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["fd00::1", "uniqueLocal"],
    ["fc12:3456::1", "uniqueLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:169.254.169.254", "linkLocal"],
    ["64:ff9b::a00:1", "rfc6052"],
    ["2002:a00:1::", "6to4"],
    ["2001::1", "teredo"],
    ["93.184.216.99", "own"],
    ["203.0.113.7", "reserved"],
  ])("%s is %s", (address, kind) => {
    expect(forbiddenKind(address, OWN)).toBe(kind);
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700::6810:84e5", "151.101.0.1"])("%s is public", (address) => {
    expect(forbiddenKind(address, OWN)).toBeNull();
  });
});

describe("checking a destination (no packet is sent)", () => {
  it("refuses literals, localhost and *.localhost without a lookup", async () => {
    const resolve = stubResolver({});
    for (const host of [
      "127.0.0.1",
      "[::1]",
      "::1",
      "localhost",
      "api.localhost",
      "169.254.169.254",
      "10.0.0.8",
      // Other spellings of loopback: checked as the addresses they are, never looked up.
      "2130706433",
      "0x7f000001",
      "0x7f.1",
      "0177.0.0.1",
      "127.1",
    ]) {
      const verdict = await checkDestination(host, policy(resolve));
      expect(verdict.ok, host).toBe(false);
    }
    expect(resolve.lookups).toEqual([]);
    const metadata = await checkDestination("169.254.169.254", policy(resolve));
    expect(metadata).toMatchObject({ ok: false });
    if (!metadata.ok) expect(metadata.reason).toContain("cloud metadata");
  });

  it("refuses this host's own public address", async () => {
    const verdict = await checkDestination("93.184.216.100", policy(stubResolver({})));
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain("this host's own addresses");
  });

  it("refuses a name that resolves to a private address, naming the address", async () => {
    const verdict = await checkDestination(
      "intranet.example",
      policy(stubResolver({ "intranet.example": [["10.0.0.5"]] })),
    );
    expect(verdict).toMatchObject({ ok: false });
    if (!verdict.ok)
      expect(verdict.reason).toBe(
        "intranet.example resolves to 10.0.0.5, a private address, which the gate never reaches",
      );
  });

  it("refuses a name with any private address among public ones", async () => {
    const resolve = stubResolver({ "mixed.example": [["93.184.216.34", "192.168.0.10"]] });
    expect((await checkDestination("mixed.example", policy(resolve))).ok).toBe(false);
  });

  it("looks a name up once and keeps the address it checked (rebinding gets no second lookup)", async () => {
    const resolve = stubResolver({ "rebind.example": [["93.184.216.34"], ["127.0.0.1"]] });
    const verdict = await checkDestination("rebind.example", policy(resolve));
    expect(verdict).toEqual({ ok: true, address: "93.184.216.34", family: 4 });
    expect(resolve.lookups).toEqual(["rebind.example"]);
    // Asked again (a new connection), the name's private answer is refused.
    expect((await checkDestination("rebind.example", policy(resolve))).ok).toBe(false);
  });

  it("says a name that does not resolve, and one that takes too long", async () => {
    const missing = await checkDestination("nothing.example", policy(stubResolver({})));
    expect(missing).toMatchObject({ ok: false });
    const slow = await checkDestination(
      "slow.example",
      policy(() => new Promise(() => {})),
    );
    expect(slow).toMatchObject({ ok: false });
    if (!slow.ok) expect(slow.reason).toContain("no answer within 500 ms");
  });

  it("maps the test flag's names to their loopback address, and only those names", async () => {
    const p = policy(stubResolver({}), { "registry.oubliette.test": "127.0.0.1" });
    expect(await checkDestination("Registry.Oubliette.Test", p)).toEqual({
      ok: true,
      address: "127.0.0.1",
      family: 4,
    });
    expect((await checkDestination("127.0.0.1", p)).ok).toBe(false);
    expect((await checkDestination("other.oubliette.test", p)).ok).toBe(false);
  });
});
