import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { RecordFormat, SameShape } from "../objects/stored-record.js";

/** What an MCP session remembers about itself (persisted; survives eviction). */
export interface McpMeta {
  sessionId: string;
  tokenId: string;
  protocolVersion: string;
  clientName: string;
  logLevel: LoggingLevel;
  createdAt: string;
  lastActivity: number;
  /**
   * The client declared form elicitation at `initialize` (a revision that has it): approval
   * requests are also put to its human as `elicitation/create` (approval-elicitations.ts).
   */
  canElicit: boolean;
}

const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] as const;

const McpMetaSchema = z.object({
  sessionId: z.string(),
  tokenId: z.string(),
  protocolVersion: z.string(),
  clientName: z.string(),
  logLevel: z.enum(LEVELS),
  createdAt: z.string(),
  lastActivity: z.number(),
  // Absent in metas stored before elicitation: those clients are not asked.
  canElicit: z.boolean().default(false),
});

/** How an MCP session's meta is stored: version 1 is the first with a version (0: bare JSON). */
export const MCP_META = { kind: "MCP session", version: 1, schema: McpMetaSchema } satisfies RecordFormat<
  typeof McpMetaSchema
>;

const sameShape: SameShape<z.output<typeof McpMetaSchema>, McpMeta> = true;
void sameShape;

/** Whether a message at `level` passes the client's `logging/setLevel` threshold. */
export function passesLevel(level: LoggingLevel, threshold: LoggingLevel): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(threshold);
}
