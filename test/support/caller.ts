/**
 * A caller for tests: the official MCP SDK client over Streamable HTTP, collecting the events it
 * receives as notifications/message and optionally answering caller tool requests. A caller made
 * with `notifications: false` ignores notifications, like clients that never show them to their
 * model, and collects the events of the sessions it follows by polling `session events` with
 * `wait_seconds` instead.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { SessionEvent } from "../../protocol/events.js";

// The MCP SDK's HTTP transport passes one AbortSignal to every fetch, and undici keeps each
// fetch's abort listener until the response is collected: under load (the bench, the soak) Node
// warns of a leak thousands of times. It is this test caller's, not the product's; keep the
// output readable and every other warning.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name !== "MaxListenersExceededWarning")
    process.stderr.write(`${warning.stack ?? warning.message}\n`);
});

export type CallerToolRequest = Extract<SessionEvent, { type: "caller_tool_request" }>;
/** What a test's handler does with a caller tool request: answer it, or leave it pending. */
export type Answer = { result: unknown } | { error: string } | "ignore";

export interface Waiter {
  predicate(event: SessionEvent): boolean;
  resolve(event: SessionEvent): void;
}

export class TestCaller {
  readonly events: SessionEvent[] = [];
  readonly loggers: string[] = [];
  #waiters = new Set<Waiter>();
  #onRequest: ((request: CallerToolRequest) => Answer | Promise<Answer>) | null = null;
  /** Progress notifications received while polling. */
  progressSeen = 0;
  readonly #following = new Set<string>();
  #closed = false;

  private constructor(
    readonly client: Client,
    readonly transport: StreamableHTTPClientTransport,
    readonly polls: boolean,
  ) {}

  /** Connects (initialize + GET stream) with `token`. */
  static async connect(
    mcpUrl: URL,
    token: string,
    name = "test-caller",
    options: { reconnectAttempts?: number; notifications?: boolean } = {},
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
    const client = new Client({ name, version: "1.0.0" });
    const caller = new TestCaller(client, transport, options.notifications === false);
    if (!caller.polls) {
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        const event = n.params.data as SessionEvent;
        caller.loggers.push(n.params.logger ?? "");
        caller.#receive(event);
      });
    }
    await client.connect(transport);
    return caller;
  }

  /**
   * A new project (sessions need one). Tests written for one container per session take a
   * project per spawn: projects are sticky to their host, sessions are not tied to each other.
   */
  async newProject(): Promise<string> {
    const created = await this.ok<{ project_id: string }>("project", {
      action: "create",
      name: `test-${crypto.randomUUID().slice(0, 12)}`,
    });
    return created.project_id;
  }

  /** Answers every caller tool request with `handler`'s answer. */
  answerWith(handler: (request: CallerToolRequest) => Answer | Promise<Answer>): void {
    this.#onRequest = handler;
  }

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    return (await this.client.callTool({ name, arguments: args })) as CallToolResult;
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

  /** Calls a tool and returns its structured result; fails the test on an isError result. */
  async ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
    const result = await this.call(name, args);
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
    return result.structuredContent as T;
  }

  async respond(
    sessionId: string,
    requestId: string,
    answer: { result?: unknown; error?: string },
  ): Promise<CallToolResult> {
    return this.call("caller_tool_response", { session_id: sessionId, request_id: requestId, ...answer });
  }

  /** Resolves with the first event (seen or future) matching `predicate`. */
  waitFor(
    predicate: (event: SessionEvent) => boolean,
    timeoutMs = 30_000,
    what = "event",
  ): Promise<SessionEvent> {
    const seen = this.events.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** Droid output lines (the scripted droid's JSON results) of a session, in order. */
  droidOutputs(sessionId: string): Record<string, unknown>[] {
    return this.events
      .filter((e) => e.session_id === sessionId && e.type === "droid_output")
      .map((e) => (e.type === "droid_output" ? (e.data as Record<string, unknown>) : {}))
      .filter((d) => d !== undefined && d !== null);
  }

  /** Resolves with a droid output line of `sessionId` matching `predicate`. */
  async waitForOutput(
    sessionId: string,
    predicate: (data: Record<string, unknown>) => boolean,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const event = await this.waitFor(
      (e) =>
        e.session_id === sessionId &&
        e.type === "droid_output" &&
        typeof e.data === "object" &&
        e.data !== null &&
        predicate(e.data as Record<string, unknown>),
      timeoutMs,
      `droid output in ${sessionId}`,
    );
    return (event.type === "droid_output" ? event.data : {}) as Record<string, unknown>;
  }

  /** Sends a script to the droid and waits for its `done` line; returns the script's outputs. */
  async runScript(sessionId: string, script: { id: string; steps: unknown[] }, timeoutMs = 60_000) {
    await this.ok("session", { action: "message", session_id: sessionId, message: JSON.stringify(script) });
    await this.waitForOutput(sessionId, (d) => d.op === "done" && d.id === script.id, timeoutMs);
    return this.droidOutputs(sessionId);
  }

  /**
   * A polling caller starts collecting a session's events (from its first) with `session events`
   * and `wait_seconds`; a caller with notifications has them already.
   */
  follow(sessionId: string, waitSeconds = 20): void {
    if (!this.polls || this.#following.has(sessionId)) return;
    this.#following.add(sessionId);
    void this.#poll(sessionId, waitSeconds);
  }

  /** Ends the MCP session (DELETE) and closes the client. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.transport.terminateSession().catch(() => {});
    await this.client.close();
  }

  async #poll(sessionId: string, waitSeconds: number): Promise<void> {
    let since = 0;
    while (!this.#closed) {
      const args = { action: "events", session_id: sessionId, since_index: since, wait_seconds: waitSeconds };
      const result = await this.client
        .callTool({ name: "session", arguments: { ...args, limit: 1000 } }, undefined, {
          onprogress: () => {
            this.progressSeen += 1;
          },
          resetTimeoutOnProgress: true,
        })
        .catch(() => null);
      if (this.#closed) return;
      const page = result?.structuredContent as
        | { events: SessionEvent[]; next_index: number; status: string }
        | undefined;
      if (!page || result?.isError) {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      for (const event of page.events) this.#receive(event);
      since = page.next_index;
      if (page.events.length === 0 && page.status !== "starting" && page.status !== "running") return;
    }
  }

  #receive(event: SessionEvent): void {
    this.events.push(event);
    for (const w of this.#waiters) {
      if (w.predicate(event)) {
        this.#waiters.delete(w);
        w.resolve(event);
      }
    }
    if (event.type === "caller_tool_request" && this.#onRequest) void this.#answer(event);
  }

  async #answer(request: CallerToolRequest): Promise<void> {
    const handler = this.#onRequest;
    if (!handler) return;
    const answer = await handler(request);
    if (answer === "ignore") return;
    await this.respond(request.session_id, request.request_id, answer);
  }
}
