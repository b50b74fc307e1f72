/** What a person signed in with a token may grant a client, and the scope a step-up asks for. */
import { describe, expect, it } from "vitest";
import { GLOBAL, project } from "../../worker/src/auth/access.js";
import { refusedClientUrl } from "../../worker/src/oauth/client-url-guard.js";
import { covers, grantableScopes, scopeNeeded } from "../../worker/src/oauth/grant-scopes.js";

describe("grantable scopes", () => {
  it("never more than the token holds", () => {
    expect(covers(["admin"], "admin")).toBe(true);
    expect(covers(["admin"], "project:p1")).toBe(true);
    expect(covers(["admin:ro"], "admin")).toBe(false);
    expect(covers(["admin:ro"], "project:p1")).toBe(false);
    expect(covers(["admin:ro"], "project:p1:ro")).toBe(true);
    expect(covers(["project:p1"], "project:p1:ro")).toBe(true);
    expect(covers(["project:p1"], "project:p2")).toBe(false);
    expect(covers(["project:p1"], "admin:ro")).toBe(false);
    expect(covers(["project:p1:ro"], "project:p1")).toBe(false);
  });

  it("offers what is held, its read-only narrowing, and what was asked for that it covers", () => {
    expect(grantableScopes(["admin"], [])).toEqual(["admin", "admin:ro"]);
    expect(grantableScopes(["admin"], ["project:p1", "junk"])).toEqual(["admin", "admin:ro", "project:p1"]);
    expect(grantableScopes(["project:p1"], ["admin", "admin:ro"])).toEqual(["project:p1", "project:p1:ro"]);
    expect(grantableScopes(["project:p1:ro"], ["project:p1"])).toEqual(["project:p1:ro"]);
  });

  it("asks a step-up for the narrowest scope that allows the action", () => {
    expect(scopeNeeded("write", project("p1"))).toBe("project:p1");
    expect(scopeNeeded("read", project("p1"))).toBe("project:p1:ro");
    expect(scopeNeeded("read", GLOBAL)).toBe("admin:ro");
    expect(scopeNeeded("admin", GLOBAL)).toBe("admin");
    expect(scopeNeeded("write", project(null))).toBe("admin");
  });
});

describe("client_id URLs", () => {
  it("refuses non-public addresses and local names unless local development allows them", () => {
    for (const url of [
      "https://127.0.0.1/c.json",
      "https://10.1.2.3/c.json",
      "https://[fd00::1]/c.json",
      "https://[::ffff:127.0.0.1]/c.json",
      "https://0.0.0.0/c.json",
      "https://localhost/c.json",
      "https://printer.local/c.json",
      "https://intranet/c.json",
      "http://client.example.com/c.json",
    ]) {
      expect(refusedClientUrl(url, false), url).not.toBeNull();
      expect(refusedClientUrl(url, true), url).toBeNull();
    }
    expect(refusedClientUrl("https://client.example.com/oauth/client.json", false)).toBeNull();
    expect(refusedClientUrl("https://8.8.8.8/c.json", false)).toBeNull();
    // Not a URL: a DCR or pre-registered client id; nothing to fetch.
    expect(refusedClientUrl("abc123", false)).toBeNull();
  });
});
