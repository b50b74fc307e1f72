import { describe, expect, it } from "vitest";
import { can, resourceOf, visibleProjects } from "../../worker/src/auth/access.js";
import { digestsEqual, randomHex, sha256Hex } from "../../worker/src/auth/digest.js";
import { type Access, type Scope, ScopeSchema, type Target } from "../../worker/src/auth/scopes.js";

/** The old shape of the check, over `can`: scopes, access, target, project (undefined: unresolved). */
function isAllowed(scopes: readonly Scope[], access: Access, target: Target, projectId?: string): boolean {
  return can({ tokenId: "t", scopes }, access, resourceOf(target, projectId ?? null));
}

describe("ScopeSchema", () => {
  it.each(["admin", "admin:ro", "project:alpha", "project:alpha_1-b:ro"])("accepts %s", (scope) => {
    expect(ScopeSchema.safeParse(scope).success).toBe(true);
  });

  it.each(["root", "admin:rw", "project:", "project:a b", "project:alpha:ro:ro", "ADMIN"])(
    "refuses %s",
    (scope) => {
      expect(ScopeSchema.safeParse(scope).success).toBe(false);
    },
  );
});

describe("visibleProjects", () => {
  it("is every project for admin scopes and only their own for project scopes", () => {
    expect(visibleProjects({ tokenId: "t", scopes: ["admin:ro"] })).toBeNull();
    expect([...(visibleProjects({ tokenId: "t", scopes: ["project:a", "project:b:ro"] }) ?? [])]).toEqual([
      "a",
      "b",
    ]);
  });
});

describe("can", () => {
  type Row = [scope: string, access: Access, target: Target, project: string | undefined, allowed: boolean];
  const rows: Row[] = [
    ["admin", "admin", "global", undefined, true],
    ["admin", "write", "project", "alpha", true],
    ["admin:ro", "read", "project", "alpha", true],
    ["admin:ro", "write", "project", "alpha", false],
    ["admin:ro", "admin", "global", undefined, false],
    ["project:alpha", "write", "project", "alpha", true],
    ["project:alpha", "write", "project", "beta", false],
    ["project:alpha", "read", "project", "beta", false],
    ["project:alpha", "admin", "global", undefined, false],
    ["project:alpha", "read", "global", undefined, true],
    ["project:alpha", "write", "global", undefined, false],
    // Not yet resolved: some scope could allow it.
    ["project:alpha", "write", "project", undefined, true],
    ["project:alpha:ro", "read", "project", "alpha", true],
    ["project:alpha:ro", "write", "project", "alpha", false],
    ["project:alpha:ro", "read", "project", "beta", false],
  ];

  it.each(rows)("%s may %s a %s tool on %s: %s", (scope, access, target, project, allowed) => {
    expect(isAllowed([ScopeSchema.parse(scope)], access, target, project)).toBe(allowed);
  });

  it("allows when any scope allows", () => {
    const scopes = ["project:alpha:ro", "project:beta"].map((s) => ScopeSchema.parse(s));
    expect(isAllowed(scopes, "write", "project", "beta")).toBe(true);
    expect(isAllowed(scopes, "write", "project", "alpha")).toBe(false);
  });

  it("allows nothing without scopes", () => {
    expect(isAllowed([], "read", "global")).toBe(false);
  });
});

describe("token digests", () => {
  it("hashes UTF-8 text to lowercase hex SHA-256", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("compares digests exactly", () => {
    const a = "ab".repeat(32);
    expect(digestsEqual(a, a)).toBe(true);
    expect(digestsEqual(a, `${a.slice(0, -1)}c`)).toBe(false);
    expect(digestsEqual(a, a.slice(1))).toBe(false);
  });

  it("makes random hex of the asked length", () => {
    const [x, y] = [randomHex(12), randomHex(12)];
    expect(x).toMatch(/^[0-9a-f]{24}$/);
    expect(x).not.toBe(y);
  });
});
