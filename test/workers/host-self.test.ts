/**
 * `GET /v1/hosts/self` against the real Worker: what it makes of a host token (the shared one,
 * an enrolled one bound to its host id, a revoked one) and of tokens that are not host tokens.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { HOST_SELF_PATH, HostSelfSchema } from "../../protocol/host-self.js";
import { uniqueHostId } from "./support/fake-host.js";
import { BASE } from "./support/frame-socket.js";
import { callTool, initialize } from "./support/mcp.js";
import { ADMIN_TOKEN, HOST_TOKEN, READER_TOKEN, UNKNOWN_TOKEN } from "./support/tokens.js";

const ErrorBodySchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

function hostSelf(token: string | null, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`${BASE}${HOST_SELF_PATH}`, {
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...headers },
  });
}

async function enrol(hostId: string): Promise<{ admin: string; token: string }> {
  const admin = await initialize();
  const enrolled = await callTool(admin, "host", { action: "enrol", host_id: hostId });
  return { admin, token: z.object({ token: z.string() }).parse(enrolled.structuredContent).token };
}

describe("GET /v1/hosts/self", () => {
  it("answers null for the shared host token, which any host id may use", async () => {
    const res = await hostSelf(HOST_TOKEN);
    expect(res.status).toBe(200);
    expect(HostSelfSchema.parse(await res.json())).toEqual({ host_id: null });
  });

  it("answers the host an enrolled token is bound to", async () => {
    const hostId = uniqueHostId("self");
    const { token } = await enrol(hostId);
    const res = await hostSelf(token);
    expect(res.status).toBe(200);
    expect(HostSelfSchema.parse(await res.json())).toEqual({ host_id: hostId });
  });

  it("refuses no token and unknown tokens with 401", async () => {
    for (const token of [null, UNKNOWN_TOKEN, "not-a-token"]) {
      const res = await hostSelf(token);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
      expect(ErrorBodySchema.parse(await res.json()).error.code).toBe("unauthorized");
    }
  });

  it("refuses a caller's token with 403", async () => {
    for (const token of [ADMIN_TOKEN, READER_TOKEN]) {
      const res = await hostSelf(token);
      expect(res.status).toBe(403);
      const body = ErrorBodySchema.parse(await res.json());
      expect(body.error).toMatchObject({ code: "forbidden" });
      expect(body.error.message).toContain("not a host token");
    }
  });

  it("refuses an enrolled token once its host is revoked (within the token cache's 2 s)", async () => {
    const hostId = uniqueHostId("self-revoked");
    const { admin, token } = await enrol(hostId);
    expect((await hostSelf(token)).status).toBe(200);
    expect((await callTool(admin, "host", { action: "revoke", host_id: hostId })).isError).toBeUndefined();
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 8_000) {
      status = (await hostSelf(token)).status;
      if (status === 200) await scheduler.wait(100);
    }
    expect(status).toBe(401);
  }, 20_000);

  it("is behind the Host check like every /v1 route", async () => {
    const res = await hostSelf(HOST_TOKEN, { host: "rebound.example" });
    expect(res.status).toBe(403);
  });
});
