/**
 * The OAuth surface inside workerd, deployed-style (no local-development setting; the public
 * origin https://worker.test): discovery documents, the 401 challenge, and client_id URLs on
 * loopback or private addresses refused before anything is fetched.
 */
import { exports } from "cloudflare:workers";

import { describe, expect, it } from "vitest";
import { BASE } from "./support/frame-socket.js";
import { mcpFetch } from "./support/mcp.js";
import { UNKNOWN_TOKEN } from "./support/tokens.js";

const get = (path: string) => exports.default.fetch(`${BASE}${path}`);

describe("OAuth discovery", () => {
  it("points a 401 at /mcp's resource metadata, with the scope to ask first", async () => {
    for (const token of [null, UNKNOWN_TOKEN]) {
      const res = await mcpFetch({ body: { jsonrpc: "2.0", id: 1, method: "ping" }, token });
      expect(res.status).toBe(401);
      const challenge = res.headers.get("www-authenticate") ?? "";
      expect(challenge).toContain(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`);
      expect(challenge).toContain('scope="admin:ro"');
      if (token !== null) expect(challenge).toContain('error="invalid_token"');
    }
  });

  it("serves RFC 9728 metadata path-aware and at the root, and RFC 8414 metadata for the issuer", async () => {
    for (const path of [
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-protected-resource",
    ]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        resource: `${BASE}/mcp`,
        authorization_servers: [BASE],
        scopes_supported: ["admin:ro"],
      });
    }
    const server = (await (await get("/.well-known/oauth-authorization-server")).json()) as Record<
      string,
      unknown
    >;
    expect(server).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      revocation_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: true,
    });
    expect(server.grant_types_supported).toEqual(
      expect.arrayContaining(["authorization_code", "refresh_token"]),
    );
  });
});

describe("client_id URLs deployed", () => {
  it.each([
    ["loopback", "https://127.0.0.1:8443/client.json"],
    ["private", "https://10.0.0.7/client.json"],
    ["link-local", "https://169.254.169.254/latest/meta-data"],
    ["IPv6 loopback", "https://[::1]/client.json"],
    ["a local name", "https://localhost/client.json"],
    ["plain http", "http://client.example.com/client.json"],
  ])("refuses a %s client_id before fetching it", async (_, clientId) => {
    const res = await get(
      `/oauth/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: "http://127.0.0.1:1234/callback",
        code_challenge: "x".repeat(43),
        code_challenge_method: "S256",
        state: "s",
      })}`,
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await res.text()).toContain("cannot sign in here");
  });
});
