import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { type HttpReply, McpErrorCode, rpcErrorReply } from "./json-rpc.js";

/**
 * MCP revisions of the 2025 era this server speaks (the `initialize` handshake, `Mcp-Session-Id`),
 * newest first.
 */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;

/**
 * MCP revisions of the stateless era (2026-07-28 on: every request carries its protocol version,
 * `server/discover` instead of the handshake), newest first. `server/discover` lists these only:
 * a client that speaks a 2025 revision uses `initialize` instead.
 */
export const MODERN_PROTOCOL_VERSIONS = ["2026-07-28"] as const;

/** The first revision of the stateless era; any later date is of that era too. */
const FIRST_MODERN_VERSION = "2026-07-28";

if (LATEST_PROTOCOL_VERSION !== SUPPORTED_PROTOCOL_VERSIONS[0]) {
  // The SDK moved on; decide deliberately whether we speak its newest version too.
  console.warn(
    JSON.stringify({ level: "warn", msg: "MCP SDK latest protocol differs", sdk: LATEST_PROTOCOL_VERSION }),
  );
}

/** The version to answer an initialize request with: the client's if we speak it, else our newest. */
export function negotiateVersion(requested: string): string {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(requested)
    ? requested
    : SUPPORTED_PROTOCOL_VERSIONS[0];
}

export function isSupportedVersion(version: string): boolean {
  return (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version);
}

/** A stateless-era revision this server speaks. */
export function isModernVersion(version: string): boolean {
  return (MODERN_PROTOCOL_VERSIONS as readonly string[]).includes(version);
}

/**
 * Whether a version string claims the stateless era: a date-shaped revision from 2026-07-28 on
 * (spoken or not). Anything else is taken for a 2025-era client.
 */
export function claimsModernEra(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= FIRST_MODERN_VERSION;
}

/** 400 for an MCP-Protocol-Version we do not speak (the transport spec requires it on every request). */
export function unsupportedVersion(version: string | null): HttpReply | null {
  if (version === null || isSupportedVersion(version)) return null;
  return rpcErrorReply(400, McpErrorCode.invalidRequest, `Unsupported MCP-Protocol-Version: ${version}`);
}
