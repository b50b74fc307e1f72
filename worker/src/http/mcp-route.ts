import { Hono } from "hono";
import { forward } from "../auth/principal-header.js";
import { createLog } from "../log.js";
import { McpErrorCode, rpcErrorResponse, toResponse } from "../mcp/json-rpc.js";
import { classifyPost } from "../mcp/modern/classify.js";
import { rejectionResponse, serveModern } from "../mcp/modern/serve.js";
import { claimsModernEra } from "../mcp/protocol-version.js";
import { stepUpChallenge } from "../oauth/step-up.js";
import { objects } from "../objects/keys.js";
import { type AppBindings, requireCaller } from "./auth-middleware.js";
import { mcpCors } from "./cors.js";
import { checkOrigin } from "./origin.js";
import { readCappedBody } from "./read-body.js";

const SESSION_ID = /^[0-9a-f-]{36}$/;

/**
 * `/mcp`: MCP Streamable HTTP in both eras. A stateless (2026-07-28) request is answered here in
 * the Worker (mcp/modern/); a 2025-era one goes to its MCP session, a McpSessionDurableObject
 * named by its `Mcp-Session-Id`.
 */
export const mcpRoute = new Hono<AppBindings>();

/** Largest JSON-RPC body accepted on /mcp. */
export const MAX_MCP_BODY_BYTES = 4 * 1024 * 1024;

// CORS sits before auth so that preflights (which carry no credentials) are answered.
mcpRoute.use("*", checkOrigin, mcpCors, requireCaller);

mcpRoute.on(["GET", "POST", "DELETE"], "/", async (c) => {
  // Read the body before any answer, so that no answer leaves it half read (see read-body.ts).
  const body = c.req.method === "POST" ? await readCappedBody(c.req.raw, MAX_MCP_BODY_BYTES) : null;
  if (body?.ok === false) {
    return rpcErrorResponse(
      413,
      McpErrorCode.invalidRequest,
      `request body exceeds ${MAX_MCP_BODY_BYTES} bytes (the limit of a JSON-RPC message on /mcp)`,
    );
  }
  if (body?.ok) {
    const post = { header: (name: string) => c.req.header(name), body: body.text };
    const classified = classifyPost(post);
    if (classified.era === "modern") {
      if ("rejection" in classified) return rejectionResponse(classified.rejection);
      const stepUp = stepUpChallenge(c.var.caller, new URL(c.req.url).origin, body.text);
      if (stepUp !== null) return stepUp;
      return serveModern({
        env: c.env,
        principal: c.var.caller,
        log: createLog({ component: "mcp", era: "2026", token: c.var.caller.tokenId }),
        message: classified.message,
        envelope: classified.envelope,
        acceptsSse: acceptsSse(c.req.header("accept")),
        header: post.header,
        waitUntil: (promise) => c.executionCtx.waitUntil(promise),
      });
    }
  }
  const presented = c.req.header("mcp-session-id");
  if (
    presented === undefined &&
    c.req.method !== "POST" &&
    claimsModernEra(c.req.header("mcp-protocol-version") ?? "")
  ) {
    // The stateless era has no session stream and no session to end.
    return new Response("method not allowed", { status: 405, headers: { allow: "POST" } });
  }
  if (presented === undefined && c.req.method !== "POST") {
    return rpcErrorResponse(
      400,
      McpErrorCode.invalidRequest,
      "Bad Request: Mcp-Session-Id header is required",
    );
  }
  if (presented !== undefined && !SESSION_ID.test(presented)) {
    return rpcErrorResponse(404, McpErrorCode.sessionNotFound, "Session not found");
  }
  const stepUp = body?.ok ? stepUpChallenge(c.var.caller, new URL(c.req.url).origin, body.text) : null;
  if (stepUp !== null) return stepUp;
  const sessionId = presented ?? crypto.randomUUID();
  const stub = objects.mcpSession(c.env, sessionId);
  const principal = c.var.caller;
  const protocolVersion = c.req.header("mcp-protocol-version") ?? null;
  switch (c.req.method) {
    case "POST": {
      const reply = await stub.post({
        principal,
        sessionId,
        fresh: presented === undefined,
        contentType: c.req.header("content-type") ?? "",
        acceptsSse: acceptsSse(c.req.header("accept")),
        protocolVersion,
        body: body?.text ?? "",
      });
      if (reply.streamId === undefined) return toResponse(reply);
      const claim = new Request(c.req.url, { headers: { accept: "text/event-stream" } });
      return stub.fetch(forward(claim, principal, `/mcp/answers/${reply.streamId}`));
    }
    case "DELETE":
      return toResponse(await stub.end({ principal, protocolVersion }));
    default:
      // The event stream is a streamed response, which only a fetch can carry.
      return stub.fetch(forward(c.req.raw, principal, "/mcp"));
  }
});

mcpRoute.all(
  "/",
  () => new Response("method not allowed", { status: 405, headers: { allow: "GET, POST, DELETE" } }),
);

function acceptsSse(accept: string | undefined): boolean {
  return (accept ?? "").toLowerCase().includes("text/event-stream");
}
