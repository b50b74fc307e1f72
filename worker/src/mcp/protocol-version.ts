import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

/** MCP protocol versions this server speaks, newest first. */
export const SUPPORTED_PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;

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
