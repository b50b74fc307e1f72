/**
 * Codex's permission questions in ask mode (thread `approvalPolicy: "untrusted"`), as requests to
 * put to the session: a command (`item/commandExecution/requestApproval`, v1
 * `execCommandApproval`) is a shell request, a file change (`item/fileChange/requestApproval`,
 * v1 `applyPatchApproval`) an edit, an MCP tool call's approval (`mcpServer/elicitation/request`
 * with `_meta.codex_approval_kind: "mcp_tool_call"`, or the `item/tool/requestUserInput`
 * fallback) an mcp_tool request. Each answer allows once or declines (the turn goes on and the
 * model hears of the refusal; only v1 carries a message to it). Oubliette's own MCP server is
 * gated by the session itself, so a question about its tools is allowed at once. Codex settles
 * a question itself on an interrupt (`serverRequest/resolved` before any answer): it is then
 * withdrawn, and its answer is no line (one written anyway is ignored by Codex).
 */
import {
  type ApprovalDecision,
  type ApprovalRequest,
  DEFAULT_DENIAL_MESSAGE,
} from "../../../protocol/approvals.js";
import { type JsonObject, JsonObjectSchema } from "../../../protocol/json.js";
import { commandLine } from "./codex-command.js";
import { CodexFileChanges, changesDiff, describeChange } from "./codex-file-changes.js";
import {
  ApplyPatchApprovalParamsSchema,
  CommandApprovalParamsSchema,
  ElicitationParamsSchema,
  ExecCommandApprovalParamsSchema,
  FileChangeApprovalParamsSchema,
  type FileUpdateChange,
  PermissionsApprovalParamsSchema,
  ServerRequestResolvedSchema,
  UserInputParamsSchema,
  type V1FileChange,
} from "./codex-wire.js";
import { asking, type DriverOutput, type PermissionAsk } from "./driver.js";
import { answerRequest, type RequestAnswer, type RpcId, type RpcWriter } from "./json-rpc.js";

const MAX_COMMAND = 16_384;
const MAX_PATH = 4096;
const MAX_DIFF = 60_000;
const MAX_TOOL = 256;
const MAX_SUMMARY = 200;

/** The id of Codex's fallback question that approves an MCP tool call. */
const MCP_APPROVAL_QUESTION = "mcp_tool_call_approval_";
/** Codex's question for an MCP tool call: `Allow the <server> MCP server to run tool "<tool>"?`. */
const MCP_QUESTION_SERVER = /^Allow the (.+?) MCP server to run tool "/;
const MCP_QUESTION_TOOL = /run tool "(.+)"\??\s*$/s;

/** A question for the session (how to answer each way), or one answered at once. */
type Question =
  | { request: ApprovalRequest; allow: unknown; deny: (message: string | undefined) => unknown }
  | { auto: RequestAnswer };

export class CodexPermissions {
  readonly #cwd: string;
  /** Oubliette's MCP server's name in Codex's config. */
  readonly #ownServer: string;
  readonly #files = new CodexFileChanges();
  /** Questions asked and neither answered nor taken back, by request id. */
  readonly #open = new Map<string, PermissionAsk>();

  constructor(options: { cwd: string; ownServer: string }) {
    this.#cwd = options.cwd;
    this.#ownServer = options.ownServer;
  }

  /** A notification: keeps what a later question names only by id (a file change's files). */
  observe(method: string, params: unknown): void {
    if (method === "item/started" || method === "item/fileChange/patchUpdated") this.#files.remember(params);
    else if (method === "item/completed") this.#files.forget(params);
  }

  /** Codex's request `request` as a permission question, or undefined when it is none. */
  question(
    rpc: RpcWriter,
    request: { id: RpcId; method: string; params: unknown },
  ): DriverOutput | undefined {
    const question = this.#map(request.method, request.params);
    if (question === undefined) return undefined;
    if ("auto" in question) return answerRequest(rpc, request, question.auto);
    const key = requestKey(request.id);
    const ask: PermissionAsk = {
      request: question.request,
      answer: (decision: ApprovalDecision) => {
        if (!this.#open.delete(key)) return [];
        const result = decision.decision === "allow" ? question.allow : question.deny(decision.message);
        return [rpc.respond(request.id, result)];
      },
    };
    this.#open.set(key, ask);
    return asking([ask]);
  }

  /** `serverRequest/resolved`: the question Codex settled without an answer of ours (an interrupt), if any. */
  resolved(params: unknown): PermissionAsk[] {
    const parsed = ServerRequestResolvedSchema.safeParse(params);
    if (!parsed.success) return [];
    const key = requestKey(parsed.data.requestId);
    const ask = this.#open.get(key);
    if (ask === undefined) return [];
    this.#open.delete(key);
    return [ask];
  }

  #map(method: string, params: unknown): Question | undefined {
    switch (method) {
      case "item/commandExecution/requestApproval":
        return { request: this.#command(params), ...V2_DECISIONS };
      case "item/fileChange/requestApproval": {
        const parsed = FileChangeApprovalParamsSchema.safeParse(params).data;
        const changes = parsed?.itemId ? this.#files.of(parsed.itemId) : undefined;
        return { request: this.#edit(changes, parsed?.grantRoot), ...V2_DECISIONS };
      }
      case "execCommandApproval": {
        const parsed = ExecCommandApprovalParamsSchema.safeParse(params).data;
        const command = parsed?.command?.length ? commandLine(parsed.command) : undefined;
        const request = command
          ? this.#shell(command, parsed?.cwd, parsed?.reason)
          : this.#unmapped(parsed?.reason ?? "Codex asks to run a command it did not name");
        return { request, ...V1_DECISIONS };
      }
      case "applyPatchApproval": {
        const parsed = ApplyPatchApprovalParamsSchema.safeParse(params).data;
        return { request: this.#edit(v1Changes(parsed?.fileChanges), parsed?.grantRoot), ...V1_DECISIONS };
      }
      case "mcpServer/elicitation/request":
        return this.#elicitation(params);
      case "item/tool/requestUserInput":
        return this.#userInput(params);
      case "item/permissions/requestApproval":
        return this.#permissions(params);
      default:
        return undefined;
    }
  }

  #command(params: unknown): ApprovalRequest {
    const parsed = CommandApprovalParamsSchema.safeParse(params).data;
    if (parsed?.command) {
      const request = this.#shell(commandLine(parsed.command), parsed.cwd, parsed.reason);
      if (parsed.kind !== "writeStdin") return request;
      return { ...request, summary: summary(`Send input to a running command: ${request.command ?? ""}`) };
    }
    const network = parsed?.networkApprovalContext;
    if (network) {
      const target = network.protocol ? `${network.protocol}://${network.host}` : network.host;
      return {
        kind: "shell",
        command: clip(`network access to ${target}`, MAX_COMMAND),
        cwd: clip(parsed?.cwd ?? this.#cwd, MAX_PATH),
        summary: summary(`Allow network access to ${network.host}`),
      };
    }
    return this.#unmapped(parsed?.reason ?? "Codex asks to run a command it did not name");
  }

  #shell(
    command: string,
    cwd: string | null | undefined,
    reason: string | null | undefined,
  ): ApprovalRequest {
    return {
      kind: "shell",
      command: clip(command, MAX_COMMAND),
      cwd: clip(cwd ?? this.#cwd, MAX_PATH),
      summary: summary(reason ? `Run: ${command} (${reason})` : `Run: ${command}`),
    };
  }

  /**
   * A file change: the first file's path, the diff of them all. Unseen files (no item for its id)
   * still make an edit request, on the directory Codex would write under (else the workspace),
   * so an edit is never put to a shell rule.
   */
  #edit(changes: FileUpdateChange[] | undefined, grantRoot: string | null | undefined): ApprovalRequest {
    const cwd = clip(this.#cwd, MAX_PATH);
    if (changes === undefined || changes.length === 0) {
      const path = grantRoot ?? this.#cwd;
      return {
        kind: "edit",
        path: clip(path, MAX_PATH),
        cwd,
        summary: summary(`Change files under ${path}`),
      };
    }
    const first = changes[0] as FileUpdateChange;
    return {
      kind: "edit",
      path: clip(first.path, MAX_PATH),
      diff: clip(changesDiff(changes), MAX_DIFF),
      cwd,
      summary: summary(changes.length === 1 ? describeChange(first) : `Edit ${changes.length} files`),
    };
  }

  #elicitation(params: unknown): Question | undefined {
    const parsed = ElicitationParamsSchema.safeParse(params).data;
    const meta = parsed?._meta;
    // A form an MCP server wants filled in is no permission question (it is declined as before).
    if (meta?.codex_approval_kind !== "mcp_tool_call") return undefined;
    const server = parsed?.serverName ?? "";
    const message = parsed?.message ?? "";
    if (server === this.#ownServer) {
      return { auto: ownServerAnswer({ action: "accept", content: {}, _meta: null }, server) };
    }
    const tool = meta.tool_name ?? MCP_QUESTION_TOOL.exec(message)?.[1];
    const args = JsonObjectSchema.safeParse(meta.tool_params).data;
    return {
      request: this.#mcpTool(server, tool, args, message),
      allow: { action: "accept", content: {}, _meta: null },
      deny: () => ({ action: "decline", content: null, _meta: null }),
    };
  }

  /** Codex's older way to approve an MCP tool call: one question whose options are `Allow` … `Cancel`. */
  #userInput(params: unknown): Question | undefined {
    const questions = UserInputParamsSchema.safeParse(params).data?.questions ?? [];
    const question = questions[0];
    if (questions.length !== 1 || question === undefined || !question.id.startsWith(MCP_APPROVAL_QUESTION))
      return undefined;
    const text = question.question ?? "";
    const server = MCP_QUESTION_SERVER.exec(text)?.[1];
    const choose = (label: string) => ({ answers: { [question.id]: { answers: [label] } } });
    if (server !== undefined && server === this.#ownServer)
      return { auto: ownServerAnswer(choose("Allow"), server) };
    return {
      request: this.#mcpTool(server ?? "", MCP_QUESTION_TOOL.exec(text)?.[1], undefined, text),
      allow: choose("Allow"),
      deny: () => choose("Cancel"),
    };
  }

  /** An MCP tool call, the tool named as the model knows it (`mcp__<server>__<tool>`). */
  #mcpTool(
    server: string,
    tool: string | undefined,
    args: JsonObject | undefined,
    message: string,
  ): ApprovalRequest {
    if (tool === undefined || server === "")
      return this.#unmapped(message || "Codex asks to call an MCP tool");
    const name = `mcp__${server}__${tool}`;
    return {
      kind: "mcp_tool",
      tool: clip(name, MAX_TOOL),
      ...(args !== undefined ? { arguments: args } : {}),
      cwd: clip(this.#cwd, MAX_PATH),
      summary: summary(`Call ${tool} (MCP server ${server})`),
    };
  }

  /** More sandbox permissions: no kind of ours, so put as a shell request naming them. */
  #permissions(params: unknown): Question {
    const parsed = PermissionsApprovalParamsSchema.safeParse(params).data;
    const permissions = parsed?.permissions ?? {};
    const what = `Grant Codex more permissions: ${JSON.stringify(permissions)}`;
    return {
      request: {
        kind: "shell",
        command: clip(what, MAX_COMMAND),
        cwd: clip(parsed?.cwd ?? this.#cwd, MAX_PATH),
        summary: summary(parsed?.reason ?? what),
      },
      allow: { permissions, scope: "turn" },
      deny: () => ({ permissions: {}, scope: "turn" }),
    };
  }

  /** A question that cannot be mapped: still asked, as a shell request in Codex's own words. */
  #unmapped(description: string): ApprovalRequest {
    return {
      kind: "shell",
      command: clip(description, MAX_COMMAND),
      cwd: clip(this.#cwd, MAX_PATH),
      summary: summary(description),
    };
  }
}

/** v2 commands and file changes: `decline` refuses the action and the turn goes on (`cancel` would end it). */
const V2_DECISIONS = { allow: { decision: "accept" }, deny: () => ({ decision: "decline" }) };

/** v1 (`execCommandApproval`, `applyPatchApproval`): a refusal carries its reason to the model. */
const V1_DECISIONS = {
  allow: { decision: "approved" },
  deny: (message: string | undefined) => ({
    decision: { denied: { rejection: message ?? DEFAULT_DENIAL_MESSAGE } },
  }),
};

function ownServerAnswer(result: unknown, server: string): RequestAnswer {
  return {
    result,
    granted: true,
    message: `allowed a tool call of ${server}: the session gates its own MCP server's tools itself`,
  };
}

/** v1's `fileChanges` (by path) as v2's list of changes. */
function v1Changes(
  fileChanges: Record<string, V1FileChange> | null | undefined,
): FileUpdateChange[] | undefined {
  if (!fileChanges) return undefined;
  return Object.entries(fileChanges).map(([path, change]) =>
    change.type === "update"
      ? { path, kind: { type: "update", move_path: change.move_path ?? null }, diff: change.unified_diff }
      : { path, kind: { type: change.type }, diff: change.content },
  );
}

/** A request id as a map key (Codex numbers its requests; JSON-RPC allows strings too). */
function requestKey(id: RpcId): string {
  return `${typeof id}:${id}`;
}

function summary(text: string): string {
  return clip(text.replace(/\s+/g, " ").trim(), MAX_SUMMARY);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
