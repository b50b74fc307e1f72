import { parseJson } from "../../../../protocol/json.js";
import { clip } from "../../../../protocol/rpc/errors.js";
import { McpErrorCode } from "../json-rpc.js";
import { claimsModernEra, isModernVersion, MODERN_PROTOCOL_VERSIONS } from "../protocol-version.js";
import { claimsEnvelope, MetaKey, type RequestEnvelope, readEnvelope } from "./envelope.js";
import { stripOws } from "./header-values.js";

/** One JSON-RPC request (or notification: `id` null) of the stateless era. */
export interface ModernMessage {
  id: string | number | null;
  method: string;
  params: Record<string, unknown>;
}

/** A refusal before any method runs: its HTTP status and JSON-RPC error. */
export interface Rejection {
  status: number;
  id: string | number | null;
  code: number;
  message: string;
  data?: unknown;
}

export type Classified =
  | { era: "legacy" }
  | { era: "modern"; message: ModernMessage; envelope: RequestEnvelope }
  | { era: "modern"; rejection: Rejection };

/** What a POST /mcp gives the classifier: its headers (names case-insensitive) and body. */
export interface InboundPost {
  header(name: string): string | undefined;
  body: string;
}

/**
 * Which era a POST /mcp belongs to, decided from the body first (MCP 2026-07-28 "era
 * classification", as SDK v2's `classifyInboundRequest`): a request whose `params._meta` names a
 * protocol version is stateless; so is one without it whose `MCP-Protocol-Version` header names
 * a stateless revision (it is then refused for the missing envelope). Everything else — batches,
 * responses, unparsable bodies, `initialize` — is the 2025 era, answered as before.
 *
 * A stateless request then passes the checks that need no method table, in the revision's
 * order: the envelope (400, -32602), the `MCP-Protocol-Version` header against it (400, -32020),
 * `Mcp-Method` against the body (400, -32020), and a version this server speaks (400, -32022).
 * Every refusal echoes the request's id.
 */
export function classifyPost(post: InboundPost): Classified {
  const headerVersion = optionalHeader(post, "mcp-protocol-version");
  // A 2025 request names neither: leave it unparsed here (its MCP session object parses it), so
  // the 2025 path pays a substring search, not a second JSON parse.
  const headerClaims = headerVersion !== undefined && claimsModernEra(headerVersion);
  if (!headerClaims && !post.body.includes(MetaKey.protocolVersion)) return { era: "legacy" };
  const parsed = parseJson(post.body);
  if (
    !parsed.ok ||
    typeof parsed.value !== "object" ||
    parsed.value === null ||
    Array.isArray(parsed.value)
  ) {
    return { era: "legacy" };
  }
  const body = parsed.value as Record<string, unknown>;
  if (typeof body.method !== "string") return { era: "legacy" };
  const params = isObject(body.params) ? body.params : {};
  const claimed = claimsEnvelope(params._meta);
  if (!claimed && !headerClaims) return { era: "legacy" };

  const id = typeof body.id === "string" || typeof body.id === "number" ? body.id : null;
  const reject = (status: number, code: number, message: string, data?: unknown) => ({
    era: "modern" as const,
    rejection: { status, id, code, message, ...(data === undefined ? {} : { data }) },
  });
  if (
    body.jsonrpc !== "2.0" ||
    ("id" in body && id === null) ||
    (body.params !== undefined && !isObject(body.params))
  ) {
    return reject(400, McpErrorCode.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 request");
  }
  if (!claimed && body.method === "initialize") {
    return reject(
      400,
      McpErrorCode.headerMismatch,
      `MCP-Protocol-Version ${clip(headerVersion ?? "")} is a stateless revision, which has no initialize`,
    );
  }
  const envelope = readEnvelope(params._meta);
  if (!envelope.ok) return reject(400, McpErrorCode.invalidParams, `Invalid params: ${envelope.reason}`);
  const version = envelope.envelope.protocolVersion;
  if (headerVersion === undefined) {
    return reject(
      400,
      McpErrorCode.headerMismatch,
      "Header mismatch: the MCP-Protocol-Version header is required",
    );
  }
  if (headerVersion !== version) {
    return reject(
      400,
      McpErrorCode.headerMismatch,
      `Header mismatch: MCP-Protocol-Version header value '${clip(headerVersion)}' does not match body value '${clip(version)}'`,
    );
  }
  const method = optionalHeader(post, "mcp-method");
  if (method === undefined) {
    return reject(400, McpErrorCode.headerMismatch, "Header mismatch: the Mcp-Method header is required");
  }
  if (method !== body.method) {
    return reject(
      400,
      McpErrorCode.headerMismatch,
      `Header mismatch: Mcp-Method header value '${clip(method)}' does not match body value '${clip(body.method)}'`,
    );
  }
  if (!isModernVersion(version)) {
    return reject(
      400,
      McpErrorCode.unsupportedProtocolVersion,
      `Unsupported protocol version: ${clip(version)}`,
      {
        supported: [...MODERN_PROTOCOL_VERSIONS],
        requested: version,
      },
    );
  }
  return { era: "modern", message: { id, method: body.method, params }, envelope: envelope.envelope };
}

function optionalHeader(post: InboundPost, name: string): string | undefined {
  const value = post.header(name);
  return value === undefined ? undefined : stripOws(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
