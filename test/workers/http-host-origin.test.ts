/**
 * DNS-rebinding protection and CORS on every caller and host route. The allowed Host and Origin
 * values come from configuration (OUBLIETTE_PUBLIC_ORIGINS = https://worker.test,
 * OUBLIETTE_ALLOWED_ORIGINS = http://allowed.example in vitest.config.ts) and loopback names only.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { initializeRequest } from "./support/mcp.js";
import { ADMIN_TOKEN, HOST_TOKEN } from "./support/tokens.js";

const SESSION = "ses_0123456789abcdef01234567";

/** A request to `url` (its host is the Host the Worker sees), with a Bearer token unless null. */
function send(
  url: string,
  init: { method?: string; headers?: Record<string, string>; token?: string | null } = {},
) {
  const method = init.method ?? "POST";
  const headers: Record<string, string> = { ...init.headers };
  const token = init.token === undefined ? ADMIN_TOKEN : init.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (method === "POST") {
    headers["content-type"] = "application/json";
    headers.accept = "application/json, text/event-stream";
  }
  const body = method === "POST" ? JSON.stringify(initializeRequest()) : undefined;
  return exports.default.fetch(url, { method, headers, body });
}

const ErrorShape = {
  error: { code: "forbidden", message: expect.stringContaining("OUBLIETTE_PUBLIC_ORIGINS") },
};

describe("Host", () => {
  it.each([
    ["POST /mcp", "http://evil.example.com/mcp", "POST", ADMIN_TOKEN],
    [
      "GET /v1/sessions/:id/events",
      `http://evil.example.com/v1/sessions/${SESSION}/events`,
      "GET",
      ADMIN_TOKEN,
    ],
    ["GET /v1/sessions/:id/ws", `http://evil.example.com/v1/sessions/${SESSION}/ws`, "GET", ADMIN_TOKEN],
    ["GET /v1/tunnel/host", "http://evil.example.com/v1/tunnel/host?host_id=h", "GET", HOST_TOKEN],
  ])(
    "refuses a rebound name with a matching Origin on %s (403 naming the variable)",
    async (_, url, method, token) => {
      const res = await send(url, { method, token, headers: { origin: "http://evil.example.com" } });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject(ErrorShape);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    },
  );

  it("refuses a rebound name even without an Origin header", async () => {
    const res = await send("http://evil.example.com:8787/mcp");
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject(ErrorShape);
  });

  it("refuses before authentication, so a bad Host never learns whether a token is valid", async () => {
    const res = await send("http://evil.example.com/mcp", { token: null });
    expect(res.status).toBe(403);
  });

  it("checks the Host header, not only the URL", async () => {
    const res = await send("https://worker.test/mcp", { headers: { host: "evil.example.com" } });
    expect(res.status).toBe(403);
  });

  it("refuses a look-alike of a configured or loopback host", async () => {
    for (const url of [
      "https://worker.test.evil.example/mcp",
      "http://localhost.evil.example/mcp",
      "http://127.0.0.1.evil.example/mcp",
    ]) {
      expect((await send(url)).status, url).toBe(403);
    }
  });

  it.each([
    ["the configured public origin", "https://worker.test/mcp"],
    ["localhost with a port", "http://localhost:8787/mcp"],
    ["127.0.0.1", "http://127.0.0.1/mcp"],
    ["another 127.x address", "http://127.1.2.3:9000/mcp"],
    ["[::1]", "http://[::1]:8787/mcp"],
  ])("serves %s", async (_, url) => {
    const res = await send(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("leaves /healthz alone", async () => {
    expect((await exports.default.fetch("http://evil.example.com/healthz")).status).toBe(200);
  });
});

describe("Origin", () => {
  it.each([
    ["a configured public origin", "https://worker.test"],
    ["an allowed browser origin", "http://allowed.example"],
    ["localhost on any port", "http://localhost:6274"],
    ["https localhost", "https://localhost"],
    ["127.0.0.1 on any port", "http://127.0.0.1:3000"],
    ["[::1] on any port", "http://[::1]:5173"],
  ])("accepts %s", async (_, origin) => {
    const res = await send("http://localhost/mcp", { headers: { origin } });
    expect(res.status).toBe(200);
  });

  it.each([
    ["another site", "http://evil.example.com"],
    ["the public origin's host with another scheme", "http://worker.test"],
    ["an opaque origin", "null"],
    ["a look-alike of localhost", "http://localhost.evil.example"],
    ["a non-http loopback origin", "ftp://localhost"],
  ])("refuses %s with 403", async (_, origin) => {
    const res = await send("http://localhost/mcp", { headers: { origin } });
    expect(res.status).toBe(403);
    expect(res.headers.get("mcp-session-id")).toBeNull();
  });

  it("refuses a disallowed Origin on the plain event streams", async () => {
    const res = await send(`https://worker.test/v1/sessions/${SESSION}/events`, {
      method: "GET",
      headers: { origin: "http://evil.example.com" },
    });
    expect(res.status).toBe(403);
  });
});

describe("CORS on /mcp", () => {
  function preflight(origin: string, method = "POST") {
    return exports.default.fetch("https://worker.test/mcp", {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": method,
        "access-control-request-headers": "authorization, content-type, mcp-session-id",
      },
    });
  }

  it("answers a preflight from an allowed origin without auth", async () => {
    const res = await preflight("http://allowed.example");
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://allowed.example");
    const methods = res.headers.get("access-control-allow-methods")?.split(",") ?? [];
    expect(methods).toEqual(expect.arrayContaining(["GET", "POST", "DELETE"]));
    const allowed = res.headers.get("access-control-allow-headers")?.toLowerCase().split(",") ?? [];
    expect(allowed).toEqual(
      expect.arrayContaining([
        "authorization",
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
      ]),
    );
    expect(res.headers.get("vary")?.toLowerCase()).toContain("origin");
  });

  it("answers a preflight from a loopback origin (e.g. MCP Inspector)", async () => {
    const res = await preflight("http://localhost:6274", "DELETE");
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://localhost:6274");
  });

  it("refuses a preflight from a disallowed origin with 403 and no CORS headers", async () => {
    const res = await preflight("http://evil.example.com");
    expect(res.status).toBe(403);
    for (const [name] of res.headers) expect(name).not.toMatch(/^access-control-/);
  });

  it("lets the browser read Mcp-Session-Id from an allowed origin's request", async () => {
    const res = await send("https://worker.test/mcp", { headers: { origin: "http://allowed.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://allowed.example");
    const exposed = res.headers.get("access-control-expose-headers")?.toLowerCase().split(",") ?? [];
    expect(exposed).toEqual(expect.arrayContaining(["mcp-session-id", "www-authenticate"]));
  });

  it("lets the browser read WWW-Authenticate on a 401", async () => {
    const res = await send("https://worker.test/mcp", {
      token: null,
      headers: { origin: "http://allowed.example" },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://allowed.example");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
  });

  it("adds no CORS headers to requests without Origin", async () => {
    const res = await send("https://worker.test/mcp");
    expect(res.status).toBe(200);
    for (const [name] of res.headers) expect(name).not.toMatch(/^access-control-/);
  });

  it("still requires auth for OPTIONS without Origin (not a preflight)", async () => {
    const res = await exports.default.fetch("https://worker.test/mcp", { method: "OPTIONS" });
    expect(res.status).toBe(401);
  });
});
