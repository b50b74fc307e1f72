import { mcpFetch, type RpcResponse, rpcBody } from "./mcp.js";
import { ADMIN_TOKEN } from "./tokens.js";

export const MODERN = "2026-07-28";

/** The `_meta` every stateless request carries; `capabilities` default to none. */
export function envelope(
  capabilities: Record<string, unknown> = {},
  version = MODERN,
): Record<string, unknown> {
  return {
    "io.modelcontextprotocol/protocolVersion": version,
    "io.modelcontextprotocol/clientCapabilities": capabilities,
    "io.modelcontextprotocol/clientInfo": { name: "workers-test", version: "1" },
  };
}

let nextId = 5000;

export interface ModernOptions {
  /** Replaces the whole `_meta` (undefined: the standard envelope). */
  meta?: Record<string, unknown> | null;
  capabilities?: Record<string, unknown>;
  /** Header overrides; a null value removes a standard header. */
  headers?: Record<string, string | null>;
  token?: string | null;
  id?: string | number;
}

/**
 * One stateless (2026-07-28) request as a conforming client sends it: the envelope in
 * `params._meta`, `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for the routed methods.
 */
export function modernFetch(
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions = {},
) {
  nextId += 1;
  const id = options.id ?? nextId;
  const meta = options.meta === undefined ? envelope(options.capabilities) : options.meta;
  const routed = params.name ?? params.uri ?? params.taskId;
  const standard: Record<string, string | null> = {
    "mcp-protocol-version": MODERN,
    "mcp-method": method,
    ...(typeof routed === "string" ? { "mcp-name": routed } : {}),
    ...options.headers,
  };
  const headers = Object.fromEntries(
    Object.entries(standard).filter((entry): entry is [string, string] => entry[1] !== null),
  );
  const body = { jsonrpc: "2.0", id, method, params: meta === null ? params : { ...params, _meta: meta } };
  return mcpFetch({ body, headers, token: options.token === undefined ? ADMIN_TOKEN : options.token });
}

/** A stateless request's JSON-RPC answer, failing unless the HTTP status is `status`. */
export async function modernRpc(
  method: string,
  params: Record<string, unknown> = {},
  options: ModernOptions & { status?: number } = {},
): Promise<
  RpcResponse & {
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: unknown };
  }
> {
  const res = await modernFetch(method, params, options);
  const expected = options.status ?? 200;
  if (res.status !== expected) throw new Error(`${method} answered HTTP ${res.status}: ${await res.text()}`);
  return (await rpcBody(res)) as never;
}
