/**
 * What every test caller does whatever its MCP era: collects the events of the droid sessions it
 * follows, waits for them, drives the scripted droid through `session message`, and answers
 * caller tool requests with a test's handler. Subclasses say how a tool is called and how events
 * arrive (TestCaller: SDK 1.x, 2025; ModernCaller: SDK v2, 2026-07-28).
 */
import type { SessionEvent } from "../../protocol/events.js";

export type CallerToolRequest = Extract<SessionEvent, { type: "caller_tool_request" }>;
/** What a test's handler does with a caller tool request: answer it, or leave it pending. */
export type Answer = { result: unknown } | { error: string } | "ignore";

/** What the base needs of a tool result (both SDKs' `CallToolResult` fit). */
export interface ToolOutcome {
  isError?: boolean;
  structuredContent?: unknown;
  content: unknown;
}

/** One page of `session events`. */
export interface EventsPage {
  events: unknown[];
  next_index: number;
  status: string;
}

interface Waiter {
  predicate(event: SessionEvent): boolean;
  resolve(event: SessionEvent): void;
}

export abstract class SessionFollower {
  readonly events: SessionEvent[] = [];
  #waiters = new Set<Waiter>();
  #onRequest: ((request: CallerToolRequest) => Answer | Promise<Answer>) | null = null;
  protected closed = false;

  abstract call(name: string, args: Record<string, unknown>): Promise<ToolOutcome>;

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

  /** Calls a tool and returns its structured result; fails the test on an isError result. */
  async ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
    const result = await this.call(name, args);
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
    return result.structuredContent as T;
  }

  respond(sessionId: string, requestId: string, answer: { result?: unknown; error?: string }) {
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
    return this.events.flatMap((e) =>
      e.session_id === sessionId && e.type === "droid_output" && isRecord(e.data) ? [e.data] : [],
    );
  }

  /** Resolves with a droid output line of `sessionId` matching `predicate`. */
  async waitForOutput(
    sessionId: string,
    predicate: (data: Record<string, unknown>) => boolean,
    timeoutMs = 30_000,
  ): Promise<Record<string, unknown>> {
    const event = await this.waitFor(
      (e) => e.session_id === sessionId && e.type === "droid_output" && isRecord(e.data) && predicate(e.data),
      timeoutMs,
      `droid output in ${sessionId}`,
    );
    return event.type === "droid_output" && isRecord(event.data) ? event.data : {};
  }

  /** Sends a script to the droid and waits for its `done` line; returns the script's outputs. */
  async runScript(sessionId: string, script: { id: string; steps: unknown[] }, timeoutMs = 60_000) {
    await this.ok("session", { action: "message", session_id: sessionId, message: JSON.stringify(script) });
    await this.waitForOutput(sessionId, (d) => d.op === "done" && d.id === script.id, timeoutMs);
    return this.droidOutputs(sessionId);
  }

  /** Takes one event in: kept, handed to whoever waits for it, answered if it is a request. */
  protected receive(event: SessionEvent): void {
    this.events.push(event);
    for (const w of this.#waiters) {
      if (w.predicate(event)) {
        this.#waiters.delete(w);
        w.resolve(event);
      }
    }
    if (event.type === "caller_tool_request" && this.#onRequest) void this.#answer(event);
  }

  /**
   * Collects a session's events from its first by long-polling `session events` (`read` asks for
   * the page from an index; null: that read failed, try again), until the session has ended and
   * nothing is left to read, or the caller closes.
   */
  protected async poll(read: (since: number) => Promise<EventsPage | null>): Promise<void> {
    let since = 0;
    while (!this.closed) {
      const page = await read(since).catch(() => null);
      if (this.closed) return;
      if (!page) {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      for (const event of page.events) this.receiveRaw(event);
      since = page.next_index;
      if (page.events.length === 0 && page.status !== "starting" && page.status !== "running") return;
    }
  }

  /** An event as it came off the wire (subclasses may check it first). */
  protected receiveRaw(event: unknown): void {
    this.receive(event as SessionEvent);
  }

  async #answer(request: CallerToolRequest): Promise<void> {
    const handler = this.#onRequest;
    if (!handler) return;
    const answer = await handler(request);
    if (answer === "ignore") return;
    await this.respond(request.session_id, request.request_id, answer);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
