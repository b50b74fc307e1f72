/**
 * The network policy (protocol/network.ts): how `allow` entries are read (and refused, naming the
 * entry), what each mode allows, `*.` for subdomains only, a port on an entry, a methods limit,
 * the stricter of two policies, and what the package-registries preset opens (listed here, so a
 * change to the list is a change to this test).
 */
import { describe, expect, it } from "vitest";
import {
  evaluateNetwork,
  NETWORK_PRESETS,
  type NetworkPolicy,
  NetworkPolicySchema,
  networkSubject,
  parseHostPattern,
} from "../../protocol/network.js";

const policy = (input: Partial<NetworkPolicy> & Pick<NetworkPolicy, "mode">): NetworkPolicy =>
  NetworkPolicySchema.parse(input);
const connect = (host: string, port = 443) => ({ host, port, method: "CONNECT" });

describe("allow entries", () => {
  it.each([
    ["registry.npmjs.org", { host: "registry.npmjs.org", subdomains: false, port: null }],
    ["Registry.NPMjs.org:443", { host: "registry.npmjs.org", subdomains: false, port: 443 }],
    ["*.example.com", { host: "example.com", subdomains: true, port: null }],
    ["*.example.com:8080", { host: "example.com", subdomains: true, port: 8080 }],
    ["93.184.216.34:80", { host: "93.184.216.34", subdomains: false, port: 80 }],
    ["[2001:db8::1]:443", { host: "2001:db8::1", subdomains: false, port: 443 }],
  ])("reads %s", (entry, expected) => {
    expect(parseHostPattern(entry)).toEqual(expected);
  });

  it.each([
    ["example.com:0", "a port is 1-65535, not 0"],
    ["example.com:70000", "a port is 1-65535, not 70000"],
    ["exa mple.com", "is not a host name"],
    ["-bad.example.com", "is not a host name"],
    ["ex*ample.com", "a wildcard may only open the name"],
    ["*.com.", "*. opens the subdomains of a domain"],
    ["*.1.2.3.4", "an address has no subdomains"],
    ["2001:db8::1", "write an IPv6 address in brackets"],
    ["example.com:http", "the port is not a number"],
  ])("refuses %s, saying why", (entry, why) => {
    const parsed = parseHostPattern(entry);
    expect(typeof parsed).toBe("string");
    expect(parsed).toContain(why);
  });

  it("names the refused entry by its index", () => {
    const parsed = NetworkPolicySchema.safeParse({
      mode: "allowlist",
      allow: ["a.example", "b.example", "c.example:0"],
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(["allow", 2]);
    expect(parsed.error?.issues[0]?.message).toContain("c.example:0");
  });

  it("refuses an unknown preset and a list of 10,000 entries", () => {
    expect(NetworkPolicySchema.safeParse({ mode: "allowlist", presets: ["everything"] }).success).toBe(false);
    const huge = Array.from({ length: 10_000 }, (_, i) => `h${i}.example.com`);
    const parsed = NetworkPolicySchema.safeParse({ mode: "allowlist", allow: huge });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain("at most 256 allow entries");
  });

  it("refuses a field it does not know (a misspelt key would be silently ignored otherwise)", () => {
    expect(NetworkPolicySchema.safeParse({ mode: "allowlist", alow: ["x.example"] }).success).toBe(false);
  });
});

describe("what a policy allows", () => {
  it("off allows nothing, and says whose policy is off", () => {
    const verdict = evaluateNetwork(
      [{ source: "project", policy: policy({ mode: "off" }) }],
      connect("a.example"),
    );
    expect(verdict).toMatchObject({ allowed: false, code: "off", source: "project" });
    if (!verdict.allowed) expect(verdict.reason).toBe("the project's network policy is off");
  });

  it("an allowlist allows its hosts and refuses the rest, naming the host and port", () => {
    const list = [
      { source: "project" as const, policy: policy({ mode: "allowlist", allow: ["a.example"] }) },
    ];
    expect(evaluateNetwork(list, connect("a.example"))).toEqual({ allowed: true, rule: "a.example" });
    expect(evaluateNetwork(list, connect("A.EXAMPLE."))).toEqual({ allowed: true, rule: "a.example" });
    const refused = evaluateNetwork(list, connect("b.example", 8443));
    expect(refused).toMatchObject({ allowed: false, code: "not_listed" });
    if (!refused.allowed)
      expect(refused.reason).toBe("b.example:8443 is not in the project's network allowlist");
  });

  it("*. opens subdomains only, never the domain itself nor a look-alike", () => {
    const list = [
      { source: "project" as const, policy: policy({ mode: "allowlist", allow: ["*.example.com"] }) },
    ];
    expect(evaluateNetwork(list, connect("pkg.example.com")).allowed).toBe(true);
    expect(evaluateNetwork(list, connect("a.b.example.com")).allowed).toBe(true);
    expect(evaluateNetwork(list, connect("example.com")).allowed).toBe(false);
    expect(evaluateNetwork(list, connect("badexample.com")).allowed).toBe(false);
    expect(evaluateNetwork(list, connect("example.com.evil.test")).allowed).toBe(false);
  });

  it("an address entry covers the address however IPv6 writes it, and IPv4 in four parts only", () => {
    const list = [
      {
        source: "project" as const,
        policy: policy({ mode: "allowlist", allow: ["93.184.216.34", "[2606:4700::6810:84e5]"] }),
      },
    ];
    expect(evaluateNetwork(list, connect("93.184.216.34")).allowed).toBe(true);
    expect(evaluateNetwork(list, connect("[2606:4700:0:0:0:0:6810:84e5]")).allowed).toBe(true);
    expect(evaluateNetwork(list, connect("2606:4700::6810:84E5")).allowed).toBe(true);
    // The same IPv4 address spelt as one number, or in hex: not the entry's spelling.
    expect(evaluateNetwork(list, connect("1572395042")).allowed).toBe(false);
    expect(evaluateNetwork(list, connect("0x5d.0xb8.0xd8.0x22")).allowed).toBe(false);
    expect(evaluateNetwork(list, connect("93.184.216.35")).allowed).toBe(false);
  });

  it("a port on an entry allows that port only", () => {
    const list = [
      { source: "project" as const, policy: policy({ mode: "allowlist", allow: ["a.example:443"] }) },
    ];
    expect(evaluateNetwork(list, connect("a.example", 443)).allowed).toBe(true);
    expect(evaluateNetwork(list, connect("a.example", 22)).allowed).toBe(false);
  });

  it("a methods limit refuses a POST, and CONNECT unless it is named", () => {
    const limited = policy({ mode: "allowlist", allow: ["a.example"], methods: ["GET", "HEAD"] });
    const list = [{ source: "project" as const, policy: limited }];
    expect(evaluateNetwork(list, { host: "a.example", port: 80, method: "GET" }).allowed).toBe(true);
    const post = evaluateNetwork(list, { host: "a.example", port: 80, method: "POST" });
    expect(post).toMatchObject({ allowed: false, code: "method" });
    if (!post.allowed) expect(post.reason).toContain("a POST request to a.example:80 is not");
    expect(evaluateNetwork(list, connect("a.example"))).toMatchObject({ allowed: false, code: "method" });
    const tunnels = [
      { source: "project" as const, policy: { ...limited, methods: ["GET" as const, "CONNECT" as const] } },
    ];
    expect(evaluateNetwork(tunnels, connect("a.example")).allowed).toBe(true);
  });

  it("open allows any host (addresses are the gate's to refuse)", () => {
    expect(
      evaluateNetwork([{ source: "project", policy: policy({ mode: "open" }) }], connect("x.example"))
        .allowed,
    ).toBe(true);
  });

  it("the stricter of the project's and the session's wins", () => {
    const project = { source: "project" as const, policy: policy({ mode: "open" }) };
    const session = {
      source: "session" as const,
      policy: policy({ mode: "allowlist", allow: ["a.example"] }),
    };
    expect(evaluateNetwork([project, session], connect("a.example")).allowed).toBe(true);
    expect(evaluateNetwork([project, session], connect("b.example"))).toMatchObject({
      allowed: false,
      source: "session",
    });
    // A session cannot open what its project keeps closed.
    const closed = {
      source: "project" as const,
      policy: policy({ mode: "allowlist", allow: ["a.example"] }),
    };
    const wide = { source: "session" as const, policy: policy({ mode: "open" }) };
    expect(evaluateNetwork([closed, wide], connect("b.example"))).toMatchObject({
      allowed: false,
      source: "project",
    });
  });

  it("subjects are host:port, IPv6 in brackets", () => {
    expect(networkSubject("Registry.npmjs.org.", 443)).toBe("registry.npmjs.org:443");
    expect(networkSubject("[::1]", 80)).toBe("[::1]:80");
  });
});

describe("the package-registries preset", () => {
  it("lists the public registries and code-download hosts, and nothing else", () => {
    expect([...NETWORK_PRESETS["package-registries"].hosts].sort()).toEqual(
      [
        "archive.ubuntu.com",
        "codeload.github.com",
        "crates.io",
        "deb.debian.org",
        "files.pythonhosted.org",
        "github.com",
        "gitlab.com",
        "index.crates.io",
        "index.rubygems.org",
        "objects.githubusercontent.com",
        "ports.ubuntu.com",
        "proxy.golang.org",
        "pypi.org",
        "raw.githubusercontent.com",
        "registry.npmjs.org",
        "registry.yarnpkg.com",
        "repo.maven.apache.org",
        "repo.yarnpkg.com",
        "repo1.maven.org",
        "rubygems.org",
        "security.debian.org",
        "security.ubuntu.com",
        "sum.golang.org",
        "static.crates.io",
      ].sort(),
    );
  });

  it("every entry is a valid allow entry, and the preset opens them", () => {
    const preset = [
      { source: "setup" as const, policy: policy({ mode: "allowlist", presets: ["package-registries"] }) },
    ];
    for (const host of NETWORK_PRESETS["package-registries"].hosts) {
      expect(typeof parseHostPattern(host)).toBe("object");
      expect(evaluateNetwork(preset, connect(host)).allowed).toBe(true);
    }
    expect(evaluateNetwork(preset, connect("example.com")).allowed).toBe(false);
  });
});
