/**
 * One raw MCP 2026-07-28 request, for what the SDK v2 client will not send or accept (a
 * `tools/call` declaring the Tasks extension is answered `resultType: "task"`, which the client
 * rejects; the SDK has no `tasks/*` methods). Built as the revision says a client must: the
 * standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` where the method routes by
 * a name) and the per-request `_meta` envelope. The answer may come as JSON or as an SSE stream.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/client";

export const MODERN_VERSION = "2026-07-28";
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** A JSON-RPC response as it came, with the HTTP status it came with. */
export interface RawReply {
  status: number;
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export interface RawRequest {
  method: string;
  params: Record<string, unknown>;
  /** The client capabilities this one request declares (default: none). */
  capabilities?: Record<string, unknown>;
  /** The `Mcp-Name` header (the tool's name, a task's id). */
  name?: string;
  /** More headers, e.g. `Mcp-Param-Project-Id`. */
  headers?: Record<string, string>;
}

let nextId = 0;

/** Sends one stateless request to `mcpUrl` with `token`; resolves with its JSON-RPC response. */
export async function modernRequest(mcpUrl: URL, token: string, request: RawRequest): Promise<RawReply> {
  nextId += 1;
  const id = `raw-${nextId}`;
  const meta = {
    [PROTOCOL_VERSION_META_KEY]: MODERN_VERSION,
    [CLIENT_CAPABILITIES_META_KEY]: request.capabilities ?? {},
    [CLIENT_INFO_META_KEY]: { name: "oubliette-raw-2026", version: "1.0.0" },
  };
  const res = await fetch(mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN_VERSION,
      "mcp-method": request.method,
      ...(request.name === undefined ? {} : { "mcp-name": request.name }),
      ...request.headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: request.method,
      params: { ...request.params, _meta: meta },
    }),
  });
  const text = await res.text();
  const message = res.headers.get("content-type")?.startsWith("text/event-stream")
    ? finalMessage(text, id)
    : (JSON.parse(text) as Record<string, unknown>);
  if (message === null) throw new Error(`no response to ${id} in the stream: ${text}`);
  return { status: res.status, ...message } as RawReply;
}

/** The stream's message answering `id` (progress notifications before it are skipped). */
function finalMessage(stream: string, id: string): Record<string, unknown> | null {
  for (const block of stream.split("\n\n")) {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data === "") continue;
    const message = JSON.parse(data) as Record<string, unknown>;
    if (message.id === id) return message;
  }
  return null;
}
