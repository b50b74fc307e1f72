import { z } from "zod";
import { AgentRuntimeSchema } from "../../../protocol/agent-runtimes.js";
import { ApprovalPolicySchema, SessionAllowanceSchema } from "../../../protocol/approvals.js";
import { CallerToolSchema } from "../../../protocol/caller-tools.js";
import { NetworkPolicySchema } from "../../../protocol/network.js";
import { NetworkUsageSchema } from "../../../protocol/network-activity.js";
import { UsageTotalsSchema } from "../../../protocol/usage.js";
import type { RecordFormat, SameShape } from "../objects/stored-record.js";
import type { SessionRecord } from "./session-record.js";
import { CALLER_PRESENCE } from "./types.js";

/**
 * A session's record as stored (read back through `SESSION_RECORD`: parsed, never cast). Fields
 * added over time carry the default an older record meant: the default workspace (before
 * workspaces), no lifetime rules, a caller whose absence fails waiting calls (`stream`).
 */
const SessionRecordSchema = z.object({
  sessionId: z.string(),
  projectId: z.string(),
  workspaceId: z.string().default("default"),
  ownerTokenId: z.string(),
  callerId: z.string().nullable(),
  // Stored as declared (the declaration was checked when it arrived).
  callerTools: z.array(CallerToolSchema),
  callerTimeoutMs: z.number(),
  callerPresence: z.enum(CALLER_PRESENCE).default("stream"),
  status: z.enum(["starting", "running", "exited", "failed", "ended", "lost"]),
  hostId: z.string().nullable(),
  runtime: z.string().nullable(),
  image: z.string().nullable(),
  agent: z
    .object({
      runtime: AgentRuntimeSchema,
      model: z.string().optional(),
      max_cost_usd: z.number().optional(),
      approvals: z.enum(["auto", "ask"]).optional(),
    })
    .optional(),
  parentId: z.string().nullable().optional(),
  depth: z.number().optional(),
  children: z.array(z.string()).optional(),
  issuedTokenId: z.string().nullable().optional(),
  usage: UsageTotalsSchema.nullable().optional(),
  createdAt: z.string(),
  endedAt: z.string().nullable(),
  lastMessageSeq: z.number(),
  storedHostEventSeq: z.number(),
  idleTimeoutMs: z.number().default(0),
  maxLifetimeMs: z.number().default(0),
  lastActivityAt: z.number().nullable().default(null),
  completedTurnSeq: z.number().default(0),
  plainDroppedAt: z.number().nullable().default(null),
  idleWatchers: z.array(z.string()).optional(),
  recentPushIds: z.array(z.string()).optional(),
  approvals: z
    .object({
      policies: z.array(ApprovalPolicySchema),
      timeoutMs: z.number(),
      denialMessage: z.string(),
      allowances: z.array(SessionAllowanceSchema),
    })
    .optional(),
  network: z
    .object({
      policies: z.array(NetworkPolicySchema),
      usage: NetworkUsageSchema.nullable(),
      blockedCount: z.number().int().nonnegative().optional(),
      recentBlockedIds: z.array(z.string()).optional(),
    })
    .optional(),
});

/** How a session's record is stored: version 1 is the first with a version (0: bare JSON). */
export const SESSION_RECORD = {
  kind: "session",
  version: 1,
  schema: SessionRecordSchema,
} satisfies RecordFormat<typeof SessionRecordSchema>;

const sameShape: SameShape<z.output<typeof SessionRecordSchema>, SessionRecord> = true;
void sameShape;
