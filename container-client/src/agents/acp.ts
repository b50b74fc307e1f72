/**
 * The Agent Client Protocol adapter (JSON-RPC 2.0 lines), shared by OpenCode (`opencode acp`)
 * and Gemini CLI (`gemini --acp`); each of them only says how it starts (`AcpAgent`). The
 * handshake is `initialize` → `session/new` (or, to take up a conversation after a crash,
 * `session/load`, whose replay of the history is not news and makes no events); each droid
 * message is a `session/prompt` whose response ends the turn, one at a time; an interrupt is the
 * `session/cancel` notification, and the cancelled prompt's response (`stopReason: "cancelled"`)
 * ends the turn.
 */
import type { AgentEventBody, StopReason } from "../../../protocol/agent-events.js";
import { MessageText } from "./acp-message.js";
import {
  type AcpPermissionAgent,
  AcpQuestions,
  answerPermission,
  PERMISSION_METHOD,
  type QuestionContext,
} from "./acp-permission.js";
import { AcpToolCalls } from "./acp-tools.js";
import {
  InitializeResultSchema,
  MessageChunkSchema,
  NewSessionResultSchema,
  PermissionCallSchema,
  PromptResultSchema,
  SessionUpdateSchema,
  ToolCallUpdateSchema,
} from "./acp-wire.js";
import {
  type AgentLaunch,
  type DriverContext,
  type DriverFactory,
  type DriverOutput,
  NOTHING,
  output,
} from "./driver.js";
import { parseRpcLine, type RpcId } from "./json-rpc.js";
import { RpcDriver } from "./rpc-driver.js";

/** What differs between ACP agents: how each starts, and how its permission questions read. */
export interface AcpAgent {
  launch(context: DriverContext): AgentLaunch;
  /** Whether `session/new` carries the MCP server (else the agent's own config file does). */
  inlineMcpServer: boolean;
  /** Its questions in "ask" mode. */
  permissions: AcpPermissionAgent;
}

const ACP_PROTOCOL_VERSION = 1;

const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  end_turn: "end_turn",
  cancelled: "interrupted",
  refusal: "refusal",
  max_turn_requests: "max_turns",
  max_tokens: "error",
};

export function acpDriver(agent: AcpAgent): DriverFactory {
  return (context) => new AcpDriver(context, agent);
}

class AcpDriver extends RpcDriver {
  readonly #agent: AcpAgent;
  readonly #tools = new AcpToolCalls();
  readonly #text = new MessageText();
  /** In "ask" mode, the permission questions waiting for the session's decision. */
  readonly #questions: AcpQuestions | undefined;
  #sessionId = "";
  #agentName: string | undefined;
  /** While `session/load` replays the conversation, its updates are history, not events. */
  #loading = false;

  constructor(context: DriverContext, agent: AcpAgent) {
    super(context, { jsonrpc: true, handshake: ["initialize", "session/new"], turnMethod: "session/prompt" });
    this.#agent = agent;
    if (context.approvals === "ask") this.#questions = new AcpQuestions(this.rpc, agent.permissions);
  }

  launch(): AgentLaunch {
    return this.#agent.launch(this.context);
  }

  conversationId(): string | undefined {
    return this.#sessionId === "" ? undefined : this.#sessionId;
  }

  start(): string[] {
    const clientCapabilities = { fs: { readTextFile: false, writeTextFile: false } };
    return [this.rpc.request("initialize", { protocolVersion: ACP_PROTOCOL_VERSION, clientCapabilities })];
  }

  /** The cancel, then (ACP wants it) every permission question still open answered `cancelled`. */
  interrupt(): string[] {
    if (this.turns.active === undefined) return [];
    const withdrawn = this.#questions?.withdrawAll() ?? [];
    return [this.rpc.notify("session/cancel", { sessionId: this.#sessionId }), ...withdrawn];
  }

  /** In "ask" mode a permission question is put to the session; everything else as always. */
  override read(line: string): DriverOutput {
    if (this.#questions !== undefined) {
      const message = parseRpcLine(line);
      if (message?.kind === "request" && message.method === PERMISSION_METHOD)
        return this.#question(this.#questions, message.id, message.params);
    }
    return super.read(line);
  }

  #question(questions: AcpQuestions, id: RpcId, params: unknown): DriverOutput {
    const context: QuestionContext = {
      cwd: this.context.cwd,
      mcpServerName: this.context.mcpServer.name,
      callInput: (toolCallId) => this.#tools.runningInput(toolCallId),
    };
    const out = questions.question(id, params, context);
    // The call's name and input, for its events later (Gemini sends no update of it before it ends).
    const call = PermissionCallSchema.safeParse(params);
    if (call.success) this.#tools.introduce(call.data.toolCall);
    return out;
  }

  protected startTurn(text: string): string[] {
    return [
      this.rpc.request("session/prompt", { sessionId: this.#sessionId, prompt: [{ type: "text", text }] }),
    ];
  }

  protected answer(method: string, params: unknown) {
    return method === PERMISSION_METHOD ? answerPermission(params) : undefined;
  }

  protected onResult(method: string | undefined, result: unknown): DriverOutput {
    switch (method) {
      case "initialize": {
        const init = InitializeResultSchema.safeParse(result).data;
        const info = init?.agentInfo;
        if (info) this.#agentName = [info.name, info.version].filter(Boolean).join(" ");
        const resume = this.context.resume;
        if (resume !== undefined && init?.agentCapabilities?.loadSession === true) {
          this.#loading = true;
          this.#sessionId = resume;
          return output([], [this.rpc.request("session/load", { ...this.#newSession(), sessionId: resume })]);
        }
        const warning: AgentEventBody[] =
          resume !== undefined
            ? [
                {
                  type: "system",
                  subtype: "warning",
                  message: "the agent cannot load its earlier session: a new conversation starts",
                },
              ]
            : [];
        return output(warning, [this.rpc.request("session/new", this.#newSession())]);
      }
      case "session/load":
        this.#loading = false;
        return this.#ready(true);
      case "session/new": {
        const session = NewSessionResultSchema.safeParse(result);
        if (!session.success) return this.cannotStart("session/new answered without a session id");
        this.#sessionId = session.data.sessionId;
        return this.#ready(false);
      }
      case "session/prompt": {
        const stop = PromptResultSchema.safeParse(result).data?.stopReason ?? "end_turn";
        const events: AgentEventBody[] =
          stop === "max_tokens"
            ? [{ type: "error", message: "the model reached its output token limit" }]
            : [];
        return this.endTurn(STOP_REASONS[stop] ?? "end_turn", events);
      }
      default:
        return NOTHING;
    }
  }

  /** A session that cannot be loaded is not fatal: a new one starts (and says so). */
  protected override onRequestError(method: string | undefined, message: string): DriverOutput | undefined {
    if (method !== "session/load") return undefined;
    this.#loading = false;
    this.#sessionId = "";
    return output(
      [
        {
          type: "system",
          subtype: "warning",
          message: `the earlier session could not be loaded (${message}): a new conversation starts`,
        },
      ],
      [this.rpc.request("session/new", this.#newSession())],
    );
  }

  /** The session is there: it may take turns. */
  #ready(resumed: boolean): DriverOutput {
    const data = {
      session_id: this.#sessionId,
      ...(this.#agentName ? { agent: this.#agentName } : {}),
      ...(resumed ? { resumed: true } : {}),
    };
    return output([{ type: "system", subtype: "init", data }], this.turns.open());
  }

  protected onNotification(method: string, params: unknown): DriverOutput {
    if (method !== "session/update" || this.#loading) return NOTHING;
    const parsed = SessionUpdateSchema.safeParse(params);
    if (!parsed.success || parsed.data.sessionId !== this.#sessionId) return NOTHING;
    const { update } = parsed.data;
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        const chunk = MessageChunkSchema.safeParse(update).data;
        const text = chunk?.content.type === "text" ? chunk.content.text : undefined;
        return text ? output(this.#text.add(text, chunk?.messageId ?? undefined)) : NOTHING;
      }
      case "tool_call":
      case "tool_call_update": {
        const call = ToolCallUpdateSchema.safeParse(update);
        if (!call.success) return NOTHING;
        // A tool call ends the message before it.
        return output([...this.#text.flush(), ...this.#tools.update(call.data)]);
      }
      default:
        return NOTHING;
    }
  }

  /** The turn's last message goes before its completion. */
  protected turnEnding(): AgentEventBody[] {
    return this.#text.flush();
  }

  #newSession() {
    const { name, command, args, env } = this.context.mcpServer;
    const server = {
      name,
      command,
      args,
      env: Object.entries(env).map(([key, value]) => ({ name: key, value })),
    };
    return { cwd: this.context.cwd, mcpServers: this.#agent.inlineMcpServer ? [server] : [] };
  }
}
