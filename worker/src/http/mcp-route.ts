import { Hono } from "hono";
import { forward } from "../auth/principal-header.js";
import { McpErrorCode, rpcErrorResponse, toResponse } from "../mcp/json-rpc.js";
import { stepUpChallenge } from "../oauth/step-up.js";
import { objects } from "../objects/keys.js";
import { type AppBindings, requireCaller } from "./auth-middleware.js";
import { mcpCors } from "./cors.js";
import { checkOrigin } from "./origin.js";
import { readCappedBody } from "./read-body.js";

const SESSION_ID = /^[0-9a-f-]{36}$/;

/** `/mcp`: MCP Streamable HTTP. Each MCP session is a McpSessionDurableObject named by its id. */
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
  const presented = c.req.header("mcp-session-id");
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
        acceptsSse: (c.req.header("accept") ?? "").toLowerCase().includes("text/event-stream"),
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
