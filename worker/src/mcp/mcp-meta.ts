import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js";

/** What an MCP session remembers about itself (persisted; survives eviction). */
export interface McpMeta {
  sessionId: string;
  tokenId: string;
  protocolVersion: string;
  clientName: string;
  logLevel: LoggingLevel;
  createdAt: string;
  lastActivity: number;
}

const LEVELS: LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/** Whether a message at `level` passes the client's `logging/setLevel` threshold. */
export function passesLevel(level: LoggingLevel, threshold: LoggingLevel): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(threshold);
}
