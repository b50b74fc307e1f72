/**
 * A caller for tests: the official MCP SDK client (1.x, the 2025 revisions) over Streamable HTTP,
 * collecting the events it receives as notifications/message and optionally answering caller tool
 * requests (session-follower.ts). A caller made
 * with `notifications: false` ignores notifications, like clients that never show them to their
 * model, and collects the events of the sessions it follows by polling `session events` with
 * `wait_seconds` instead.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { SessionEvent } from "../../protocol/events.js";
import { type EventsPage, SessionFollower } from "./session-follower.js";

// The MCP SDK's HTTP transport passes one AbortSignal to every fetch, and undici keeps each
// fetch's abort listener until the response is collected: under load (the bench, the soak) Node
// warns of a leak thousands of times. It is this test caller's, not the product's; keep the
// output readable and every other warning.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name !== "MaxListenersExceededWarning")
    process.stderr.write(`${warning.stack ?? warning.message}\n`);
});

export type { Answer, CallerToolRequest } from "./session-follower.js";

export class TestCaller extends SessionFollower {
  readonly loggers: string[] = [];
  /** Progress notifications received while polling. */
  progressSeen = 0;
  readonly #following = new Set<string>();

  private constructor(
    readonly client: Client,
    readonly transport: StreamableHTTPClientTransport,
    readonly polls: boolean,
  ) {
    super();
  }

  /** Connects (initialize + GET stream) with `token`. */
  static async connect(
    mcpUrl: URL,
    token: string,
    name = "test-caller",
    options: {
      reconnectAttempts?: number;
      notifications?: boolean;
      /** Declares the elicitation capability and answers each `elicitation/create` with this. */
      elicit?: (request: ElicitRequest["params"]) => ElicitResult | Promise<ElicitResult>;
    } = {},
  ): Promise<TestCaller> {
    const transport = new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      reconnectionOptions: {
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 5000,
        reconnectionDelayGrowFactor: 1.5,
        maxRetries: options.reconnectAttempts ?? 2,
      },
    });
    const client = new Client(
      { name, version: "1.0.0" },
      options.elicit ? { capabilities: { elicitation: {} } } : undefined,
    );
    const elicit = options.elicit;
    if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
    const caller = new TestCaller(client, transport, options.notifications === false);
    if (!caller.polls) {
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        caller.loggers.push(n.params.logger ?? "");
        caller.receive(n.params.data as SessionEvent);
      });
    }
    await client.connect(transport);
    return caller;
  }

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    return (await this.client.callTool({ name, arguments: args })) as CallToolResult;
  }

  override respond(
    sessionId: string,
    requestId: string,
    answer: { result?: unknown; error?: string },
  ): Promise<CallToolResult> {
    return super.respond(sessionId, requestId, answer) as Promise<CallToolResult>;
  }

  /**
   * Calls a tool with a progressToken: its result, the progress notifications heard while it
   * ran (their messages), and how long it took.
   */
  async callWithProgress(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ result: CallToolResult; progress: string[]; ms: number }> {
    const progress: string[] = [];
    const started = Date.now();
    const result = (await this.client.callTool({ name, arguments: args }, undefined, {
      onprogress: (p) => {
        progress.push(p.message ?? "");
      },
    })) as CallToolResult;
    return { result, progress, ms: Date.now() - started };
  }

  /**
   * A polling caller starts collecting a session's events (from its first) with `session events`
   * and `wait_seconds`; a caller with notifications has them already.
   */
  follow(sessionId: string, waitSeconds = 20): void {
    if (!this.polls || this.#following.has(sessionId)) return;
    this.#following.add(sessionId);
    void this.poll(async (since) => {
      const args = { action: "events", session_id: sessionId, since_index: since, wait_seconds: waitSeconds };
      const result = await this.client.callTool(
        { name: "session", arguments: { ...args, limit: 1000 } },
        undefined,
        {
          onprogress: () => {
            this.progressSeen += 1;
          },
          resetTimeoutOnProgress: true,
        },
      );
      return result.isError ? null : ((result.structuredContent as EventsPage | undefined) ?? null);
    });
  }

  /** Ends the MCP session (DELETE) and closes the client. */
  async close(): Promise<void> {
    this.closed = true;
    await this.transport.terminateSession().catch(() => {});
    await this.client.close();
  }
}
