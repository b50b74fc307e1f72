/**
 * ACP's `session/request_permission`, the agent's question before a tool call.
 *
 * Unattended ("auto"): answered at once so a session never waits on a person: the agents are
 * started to allow everything (OpenCode `permission: {"*": "allow"}`, Gemini `--yolo`), so a
 * request is rare; when one comes, the one-time allow option is chosen (else an "always" one),
 * and a request that offers no allow option is cancelled (`answerPermission`).
 *
 * Asking ("ask"): each question becomes PermissionAsks (`AcpQuestions`), what it asks mapped by
 * the agent's own mapper; one about a tool of our own MCP server is allowed at once (the session
 * gates those itself). The answer picks the offered option of kind `allow_once` or `reject_once`
 * (the CLI's "always" options are never chosen: "allow for the session" is the session's to
 * remember); a deny carries no message (ACP has no field for one).
 */
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";
import type { JsonValue } from "../../../protocol/json.js";
import { unmappedRequest } from "./acp-request.js";
import {
  type DiffContent,
  DiffContentSchema,
  type PermissionOption,
  PermissionQuestionSchema,
  PermissionRequestSchema,
  type PermissionToolCall,
  permissionOptions,
  ToolCallContentSchema,
} from "./acp-wire.js";
import { asking, autoAnswered, type DriverOutput, output, type PermissionAsk } from "./driver.js";
import type { RequestAnswer, RpcId, RpcWriter } from "./json-rpc.js";

export const PERMISSION_METHOD = "session/request_permission";

const ALLOW_KINDS = ["allow_once", "allow_always"];

export function answerPermission(params: unknown): RequestAnswer {
  const request = PermissionRequestSchema.safeParse(params).data;
  const what = request?.toolCall?.title ?? "a tool call";
  for (const kind of ALLOW_KINDS) {
    const option = request?.options.find((candidate) => candidate.kind === kind);
    if (option !== undefined) {
      return {
        result: { outcome: { outcome: "selected", optionId: option.optionId } },
        granted: true,
        message: `allowed ${what} (${option.name ?? option.optionId})`,
      };
    }
  }
  return {
    result: { outcome: { outcome: "cancelled" } },
    granted: false,
    message: `cancelled the permission request for ${what}: it offered no option to allow it`,
  };
}

/** What a question asks: about a tool of our own MCP server (allowed at once), or these requests. */
export type PermissionMapping = { ownTool: true } | { ownTool: false; requests: ApprovalRequest[] };

/** What a mapper may know besides the question. */
export interface QuestionContext {
  /** The session's working directory. */
  cwd: string;
  /** Our own MCP server's name in the agent's config (`oubliette`). */
  mcpServerName: string;
  /** The input an earlier update of this tool call carried (OpenCode: an MCP tool's arguments). */
  callInput(toolCallId: string): JsonValue | undefined;
}

export type PermissionMapper = (call: PermissionToolCall, context: QuestionContext) => PermissionMapping;

/** The text items of a tool call's content. */
export function contentTexts(content: unknown[] | null | undefined): string[] {
  return (content ?? []).flatMap((item) => {
    const text = ToolCallContentSchema.safeParse(item).data?.content?.text;
    return text === undefined ? [] : [text];
  });
}

/** The `diff` items of a tool call's content. */
export function contentDiffs(content: unknown[] | null | undefined): DiffContent[] {
  return (content ?? []).flatMap((item) => {
    const diff = DiffContentSchema.safeParse(item);
    return diff.success ? [diff.data] : [];
  });
}

/** How an ACP agent's questions are read and answered. */
export interface AcpPermissionAgent {
  map: PermissionMapper;
  /** The allow-once option's id, should a question not offer one of kind `allow_once`. */
  allowOnceId: string;
}

/** One question still waiting for its answer. */
interface Open {
  settled: boolean;
}

/**
 * The questions of one agent process in "ask" mode: each becomes PermissionAsks whose answers
 * are the JSON-RPC responses to the question's id. A question about several files is one ask per
 * file, answered once: allowed when every ask is, denied at the first deny.
 */
export class AcpQuestions {
  readonly #rpc: RpcWriter;
  readonly #agent: AcpPermissionAgent;
  readonly #open = new Map<RpcId, Open>();

  constructor(rpc: RpcWriter, agent: AcpPermissionAgent) {
    this.#rpc = rpc;
    this.#agent = agent;
  }

  /** The question `id`, as asks (or answered at once when it is about our own server's tool). */
  question(id: RpcId, params: unknown, context: QuestionContext): DriverOutput {
    const parsed = PermissionQuestionSchema.safeParse(params);
    const call: PermissionToolCall = parsed.data?.toolCall ?? { toolCallId: "" };
    const options = permissionOptions(parsed.data?.options ?? []);
    const allow = this.#selected(
      id,
      options.find((option) => option.kind === "allow_once"),
    );
    const mapping = this.#map(call, context);
    if (mapping.ownTool) {
      const message = `allowed ${call.title ?? "a tool call"} (a tool of our own MCP server: the session gates it)`;
      return output([autoAnswered(message, { method: PERMISSION_METHOD, granted: true })], [allow]);
    }
    const reject = options.find((option) => option.kind === "reject_once");
    const deny = reject ? this.#selected(id, reject) : this.#cancelled(id);
    return asking(this.#asks(id, mapping.requests, allow, deny));
  }

  /** One ask per request, all answering question `id` once: `allow` when every one allows, `deny` at the first deny. */
  #asks(id: RpcId, requests: ApprovalRequest[], allow: string, deny: string): PermissionAsk[] {
    const open: Open = { settled: false };
    this.#open.set(id, open);
    let waiting = requests.length;
    const settle = (line: string): string[] => {
      if (open.settled) return [];
      open.settled = true;
      this.#open.delete(id);
      return [line];
    };
    return requests.map((request) => {
      let decided = false;
      return {
        request,
        answer: (decision: ApprovalDecision) => {
          if (decided) return [];
          decided = true;
          if (decision.decision === "deny") return settle(deny);
          waiting -= 1;
          return waiting === 0 ? settle(allow) : [];
        },
      };
    });
  }

  /**
   * After `session/cancel`, ACP wants every question still open answered `cancelled`: these are
   * the lines (and a later decision of the session's answers nothing more).
   */
  withdrawAll(): string[] {
    const lines = [...this.#open.entries()].map(([id, open]) => {
      open.settled = true;
      return this.#cancelled(id);
    });
    this.#open.clear();
    return lines;
  }

  /** The agent's mapping of a question; one it cannot make (or that asks nothing) is the fallback. */
  #map(call: PermissionToolCall, context: QuestionContext): PermissionMapping {
    try {
      const mapping = this.#agent.map(call, context);
      if (mapping.ownTool || mapping.requests.length > 0) return mapping;
    } catch {
      // Odd input the mapper did not foresee: still asked, below.
    }
    return { ownTool: false, requests: [unmappedRequest(call.title, undefined, context.cwd)] };
  }

  #selected(id: RpcId, option: PermissionOption | undefined): string {
    const optionId = option?.optionId ?? this.#agent.allowOnceId;
    return this.#rpc.respond(id, { outcome: { outcome: "selected", optionId } });
  }

  #cancelled(id: RpcId): string {
    return this.#rpc.respond(id, { outcome: { outcome: "cancelled" } });
  }
}
