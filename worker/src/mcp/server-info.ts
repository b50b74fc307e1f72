/** How this server names itself to MCP clients (2025 `initialize`, 2026 result `_meta`). */
export const SERVER_INFO = { name: "oubliette-edge", version: "0.1.0" } as const;
