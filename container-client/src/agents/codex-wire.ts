/**
 * The parts of Codex's app-server protocol (v2, as `codex app-server` 0.169 speaks it) the driver
 * reads. Objects are parsed loosely: Codex adds fields in every release, and only these matter.
 */
import { z } from "zod";
import { JsonValueSchema } from "../../../protocol/json.js";

const IdOnly = z.object({ id: z.string() });

/** Result of `thread/start`. */
export const ThreadStartResultSchema = z.object({ thread: IdOnly, model: z.string().optional() });

/** Result of `turn/start`, and the params of `turn/started`. */
export const TurnHolderSchema = z.object({ turn: IdOnly });

/** `turn/completed`: how the turn ended (`completed`, `interrupted` or `failed`, with its error). */
export const TurnCompletedSchema = z.object({
  turn: z.object({
    id: z.string(),
    status: z.string(),
    error: z.object({ message: z.string() }).nullish(),
  }),
});

export const AgentMessageDeltaSchema = z.object({ delta: z.string() });

const McpContentSchema = z.object({ type: z.string(), text: z.string().optional() }).loose();

/** The items the driver maps (`item/started`, `item/completed`); other item types are skipped. */
export const ItemSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("agentMessage"), id: z.string(), text: z.string() }),
  z.object({
    type: z.literal("mcpToolCall"),
    id: z.string(),
    server: z.string(),
    tool: z.string(),
    status: z.string(),
    arguments: JsonValueSchema.nullish(),
    result: z.object({ content: z.array(McpContentSchema).nullish() }).nullish(),
    error: z.object({ message: z.string() }).nullish(),
  }),
  z.object({
    type: z.literal("commandExecution"),
    id: z.string(),
    command: z.union([z.string(), z.array(z.string())]),
    cwd: z.string().nullish(),
    status: z.string(),
    aggregatedOutput: z.string().nullish(),
    exitCode: z.number().nullish(),
  }),
  z.object({
    type: z.literal("fileChange"),
    id: z.string(),
    changes: z.array(z.object({ path: z.string() }).loose()),
    status: z.string(),
  }),
]);
export type Item = z.infer<typeof ItemSchema>;

export const ItemNotificationSchema = z.object({ item: z.object({ type: z.string() }).loose() });

/** `error`: a failure mid-turn; `willRetry` when Codex is about to try again. */
export const ErrorNotificationSchema = z.object({
  error: z.object({ message: z.string() }),
  willRetry: z.boolean().nullish(),
});

/** `warning` and `configWarning`. */
export const WarningSchema = z.object({ message: z.string().optional(), summary: z.string().optional() });

export const McpStartupSchema = z.object({
  name: z.string(),
  status: z.string(),
  error: z.string().nullish(),
});

/*
 * Codex's permission questions (server requests) and what the driver keeps to map them: the
 * approval policy `untrusted` makes Codex ask before a command, a file change or an MCP tool call.
 */

const Text = z.string();
const Nullable = z.string().nullish();

/** `item/commandExecution/requestApproval` (v2): `command` is one shell line (absent for network prompts). */
export const CommandApprovalParamsSchema = z.object({
  kind: Nullable,
  itemId: Nullable,
  reason: Nullable,
  command: Nullable,
  cwd: Nullable,
  networkApprovalContext: z.object({ host: Text, protocol: Nullable }).loose().nullish(),
});

/** `item/fileChange/requestApproval` (v2): no path and no diff; they come with the item (by `itemId`). */
export const FileChangeApprovalParamsSchema = z.object({
  itemId: Nullable,
  reason: Nullable,
  grantRoot: Nullable,
});

/** `execCommandApproval` (v1): the command as argv. */
export const ExecCommandApprovalParamsSchema = z.object({
  command: z.array(Text).nullish(),
  cwd: Nullable,
  reason: Nullable,
});

/** One file of a v1 `applyPatchApproval`. */
export const V1FileChangeSchema = z.union([
  z.object({ type: z.enum(["add", "delete"]), content: Text }),
  z.object({ type: z.literal("update"), unified_diff: Text, move_path: Nullable }),
]);

export type V1FileChange = z.infer<typeof V1FileChangeSchema>;

/** `applyPatchApproval` (v1): the files and their changes, by path. */
export const ApplyPatchApprovalParamsSchema = z.object({
  fileChanges: z.record(Text, V1FileChangeSchema.catch({ type: "update", unified_diff: "" })).nullish(),
  reason: Nullable,
  grantRoot: Nullable,
});

/** `mcpServer/elicitation/request`; an MCP tool call's approval has `_meta.codex_approval_kind: "mcp_tool_call"`. */
export const ElicitationParamsSchema = z.object({
  serverName: Nullable,
  message: Nullable,
  _meta: z
    .object({
      codex_approval_kind: Nullable,
      tool_name: Nullable,
      tool_title: Nullable,
      tool_params: JsonValueSchema.optional(),
    })
    .loose()
    .nullish(),
});

/** `item/tool/requestUserInput`: Codex's fallback for an MCP tool call's approval, question `mcp_tool_call_approval_<call>`. */
export const UserInputParamsSchema = z.object({
  questions: z.array(z.object({ id: Text, question: Nullable }).loose()),
});

/** `item/permissions/requestApproval`: more sandbox permissions (moot under full access). */
export const PermissionsApprovalParamsSchema = z.object({
  cwd: Nullable,
  reason: Nullable,
  permissions: JsonValueSchema.optional(),
});

/** One file of a `fileChange` item: `diff` is the new content (add), the old one (delete) or a unified diff (update). */
export const FileUpdateChangeSchema = z.object({
  path: Text,
  kind: z.object({ type: Text, move_path: Nullable }).loose().nullish(),
  diff: Nullable,
});
export type FileUpdateChange = z.infer<typeof FileUpdateChangeSchema>;

/** A `fileChange` item (`item/started`, `item/completed`), or `item/fileChange/patchUpdated`'s params. */
export const FileChangeHolderSchema = z.union([
  z.object({
    item: z.object({ type: z.literal("fileChange"), id: Text, changes: z.array(FileUpdateChangeSchema) }),
  }),
  z.object({ itemId: Text, changes: z.array(FileUpdateChangeSchema) }),
]);

/** `serverRequest/resolved`: a request of Codex's is settled (answered, or taken back on an interrupt). */
export const ServerRequestResolvedSchema = z.object({ requestId: z.union([z.number(), z.string()]) });
