import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { McpErrorCode, rpcErrorResponse } from "../mcp/json-rpc.js";
import { type AppBindings, requireCaller } from "./auth-middleware.js";
import { checkOrigin } from "./origin.js";
import { forward, MCP_NEW_SESSION_HEADER, MCP_SESSION_ID_HEADER } from "./principal-header.js";

const SESSION_ID = /^[0-9a-f-]{36}$/;

/** `/mcp`: MCP Streamable HTTP. Each MCP session is a McpSessionDurableObject named by its id. */
export const mcpRoute = new Hono<AppBindings>();

/** Largest JSON-RPC body accepted on /mcp. */
export const MAX_MCP_BODY_BYTES = 4 * 1024 * 1024;

mcpRoute.use(
  "*",
  checkOrigin,
  requireCaller,
  bodyLimit({
    maxSize: MAX_MCP_BODY_BYTES,
    onError: () =>
      rpcErrorResponse(413, McpErrorCode.invalidRequest, `request body exceeds ${MAX_MCP_BODY_BYTES} bytes`),
  }),
);

mcpRoute.on(["GET", "POST", "DELETE"], "/", async (c) => {
  const presented = c.req.header("mcp-session-id");
  let sessionId: string;
  const extra: Record<string, string> = {};
  if (presented === undefined) {
    if (c.req.method !== "POST") {
      return rpcErrorResponse(
        400,
        McpErrorCode.invalidRequest,
        "Bad Request: Mcp-Session-Id header is required",
      );
    }
    sessionId = crypto.randomUUID();
    extra[MCP_NEW_SESSION_HEADER] = "1";
  } else {
    if (!SESSION_ID.test(presented))
      return rpcErrorResponse(404, McpErrorCode.sessionNotFound, "Session not found");
    sessionId = presented;
  }
  extra[MCP_SESSION_ID_HEADER] = sessionId;
  const stub = c.env.MCP_SESSIONS.get(c.env.MCP_SESSIONS.idFromName(sessionId));
  return stub.fetch(forward(c.req.raw, c.var.caller, "/mcp", extra));
});

mcpRoute.all(
  "/",
  () => new Response("method not allowed", { status: 405, headers: { allow: "GET, POST, DELETE" } }),
);
