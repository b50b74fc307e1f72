/**
 * Codex's adapter: `codex app-server`, JSON-RPC lines without the `jsonrpc` field. The handshake
 * is `initialize` → (its response) `initialized` + `thread/start`; each droid message is a
 * `turn/start` on that thread, one at a time; `turn/interrupt` needs the turn's id, so an
 * interrupt that comes before it is known is sent once it is. `turn/completed` ends a turn.
 * In ask mode the thread asks (`approvalPolicy: "untrusted"`) and Codex's permission questions
 * go to the session as asks (codex-permission.ts); otherwise it asks nothing and what it requests
 * is answered at once (codex-requests.ts).
 */
import type { AgentEventBody, StopReason } from "../../../protocol/agent-events.js";
import { CodexItems } from "./codex-items.js";
import { codexLaunch } from "./codex-launch.js";
import { CodexPermissions } from "./codex-permission.js";
import { answerCodexRequest } from "./codex-requests.js";
import {
  AgentMessageDeltaSchema,
  ErrorNotificationSchema,
  ItemNotificationSchema,
  McpStartupSchema,
  ThreadStartResultSchema,
  TurnCompletedSchema,
  TurnHolderSchema,
  WarningSchema,
} from "./codex-wire.js";
import { type AgentDriver, type DriverContext, type DriverOutput, NOTHING, output } from "./driver.js";
import { parseRpcLine } from "./json-rpc.js";
import { RpcDriver } from "./rpc-driver.js";

/** How the driver introduces itself in `initialize`. */
const CLIENT_INFO = { name: "oubliette", version: "0.1.0" };

const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  completed: "end_turn",
  interrupted: "interrupted",
  failed: "error",
};

export function codexDriver(context: DriverContext): AgentDriver {
  return new CodexDriver(context);
}

class CodexDriver extends RpcDriver {
  readonly #items = new CodexItems();
  #threadId = "";
  /** The id of the turn in flight, once Codex has said it. */
  #turnId: string | undefined;
  #interruptWanted = false;
  /** The thread exists (thread/start or thread/resume answered). */
  #threadReady = false;
  /** Codex said Oubliette's MCP server is ready, or that it failed to start. */
  #serverSettled = false;
  #opened = false;
  /** In ask mode: Codex's permission questions, put to the session. */
  readonly #permissions: CodexPermissions | undefined;

  constructor(context: DriverContext) {
    super(context, {
      jsonrpc: false,
      handshake: ["initialize", "thread/start", "thread/resume"],
      turnMethod: "turn/start",
    });
    this.#permissions =
      context.approvals === "ask"
        ? new CodexPermissions({ cwd: context.cwd, ownServer: context.mcpServer.name })
        : undefined;
  }

  override read(line: string): DriverOutput {
    if (this.#permissions !== undefined) {
      const message = parseRpcLine(line);
      if (message?.kind === "request") {
        const question = this.#permissions.question(this.rpc, message);
        if (question !== undefined) return question;
      }
    }
    return super.read(line);
  }

  launch() {
    return codexLaunch(this.context);
  }

  conversationId(): string | undefined {
    return this.#threadId === "" ? undefined : this.#threadId;
  }

  start(): string[] {
    return [this.rpc.request("initialize", { clientInfo: CLIENT_INFO })];
  }

  interrupt(): string[] {
    if (this.turns.active === undefined) return [];
    if (this.#turnId === undefined) {
      this.#interruptWanted = true;
      return [];
    }
    return [this.rpc.request("turn/interrupt", { threadId: this.#threadId, turnId: this.#turnId })];
  }

  protected startTurn(text: string): string[] {
    return [this.rpc.request("turn/start", { threadId: this.#threadId, input: [{ type: "text", text }] })];
  }

  protected answer(method: string, params: unknown) {
    return answerCodexRequest(method, params);
  }

  protected onResult(method: string | undefined, result: unknown): DriverOutput {
    switch (method) {
      case "initialize": {
        // Ask mode: Codex asks before every command (0.169 asked even for `ls`), every file
        // change and every MCP tool call its annotations mark as writing; a person answers (the
        // reviewer), not a model.
        const settings =
          this.#permissions === undefined
            ? { cwd: this.context.cwd, approvalPolicy: "never", sandbox: "danger-full-access" }
            : {
                cwd: this.context.cwd,
                approvalPolicy: "untrusted",
                approvalsReviewer: "user",
                sandbox: "danger-full-access",
              };
        // After a crash the same thread goes on (Codex keeps it in CODEX_HOME).
        const thread =
          this.context.resume !== undefined
            ? this.rpc.request("thread/resume", { threadId: this.context.resume, ...settings })
            : this.rpc.request("thread/start", settings);
        return output([], [this.rpc.notify("initialized"), thread]);
      }
      case "thread/start":
      case "thread/resume": {
        const thread = ThreadStartResultSchema.safeParse(result);
        if (!thread.success) return this.cannotStart(`${method} answered without a thread id`);
        this.#threadId = thread.data.thread.id;
        const data = {
          thread_id: this.#threadId,
          ...(thread.data.model ? { model: thread.data.model } : {}),
          ...(method === "thread/resume" ? { resumed: true } : {}),
        };
        this.#threadReady = true;
        return output([{ type: "system", subtype: "init", data }], this.#openWhenReady());
      }
      case "turn/start":
        return output([], this.#learnTurn(result));
      default:
        return NOTHING;
    }
  }

  protected onNotification(method: string, params: unknown): DriverOutput {
    this.#permissions?.observe(method, params);
    switch (method) {
      case "item/agentMessage/delta": {
        const delta = AgentMessageDeltaSchema.safeParse(params);
        return delta.success ? output([{ type: "delta", text: delta.data.delta }]) : NOTHING;
      }
      case "item/started":
        return output(this.#items.started(ItemNotificationSchema.safeParse(params).data?.item));
      case "item/completed":
        return output(this.#items.completed(ItemNotificationSchema.safeParse(params).data?.item));
      case "turn/started":
        return output([], this.#learnTurn(params));
      case "turn/completed":
        return this.#onTurnCompleted(params);
      case "serverRequest/resolved": {
        const withdrawn = this.#permissions?.resolved(params) ?? [];
        return withdrawn.length > 0 ? { events: [], write: [], withdrawn } : NOTHING;
      }
      case "error": {
        const error = ErrorNotificationSchema.safeParse(params).data;
        if (error === undefined) return NOTHING;
        if (error.willRetry)
          return output([{ type: "system", subtype: "retry", message: error.error.message }]);
        return output([{ type: "error", message: error.error.message }]);
      }
      case "warning":
      case "configWarning": {
        const warning = WarningSchema.safeParse(params).data;
        const message = warning?.message ?? warning?.summary;
        return message ? output([{ type: "system", subtype: "warning", message }]) : NOTHING;
      }
      case "mcpServer/startupStatus/updated": {
        const status = McpStartupSchema.safeParse(params).data;
        if (status === undefined) return NOTHING;
        const settled = status.status === "ready" || status.status === "failed";
        if (settled && status.name === this.context.mcpServer.name) this.#serverSettled = true;
        const write = settled ? this.#openWhenReady() : [];
        if (status.status !== "failed") return output([], write);
        const why = status.error ? `: ${status.error}` : "";
        return output([{ type: "error", message: `MCP server ${status.name} failed to start${why}` }], write);
      }
      default:
        return NOTHING;
    }
  }

  /**
   * Turns start once the thread exists and Codex has started Oubliette's MCP server (or given up
   * on it): Codex does not wait for its MCP servers before a turn, so on a loaded host a first
   * turn went to the model without Oubliette's tools or the caller's. Codex reports every
   * server's start as ready or failed (failed at its startup timeout at the latest).
   */
  #openWhenReady(): string[] {
    if (!this.#threadReady || !this.#serverSettled || this.#opened) return [];
    this.#opened = true;
    return this.turns.open();
  }

  protected turnEnding(): AgentEventBody[] {
    this.#turnId = undefined;
    this.#interruptWanted = false;
    return [];
  }

  #onTurnCompleted(params: unknown): DriverOutput {
    const parsed = TurnCompletedSchema.safeParse(params);
    if (!parsed.success || this.turns.active === undefined) return NOTHING;
    const { turn } = parsed.data;
    // A turn this driver did not start (Codex may run its own, such as a compaction).
    if (this.#turnId !== undefined && turn.id !== this.#turnId) return NOTHING;
    const events: AgentEventBody[] = turn.error ? [{ type: "error", message: turn.error.message }] : [];
    return this.endTurn(STOP_REASONS[turn.status] ?? "end_turn", events);
  }

  /** Keeps the turn's id (from `turn/start`'s result or `turn/started`); sends an interrupt that waited for it. */
  #learnTurn(holder: unknown): string[] {
    const parsed = TurnHolderSchema.safeParse(holder);
    if (!parsed.success || this.turns.active === undefined || this.#turnId !== undefined) return [];
    this.#turnId = parsed.data.turn.id;
    if (!this.#interruptWanted) return [];
    this.#interruptWanted = false;
    return this.interrupt();
  }
}
