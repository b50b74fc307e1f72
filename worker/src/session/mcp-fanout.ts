import type { SessionEvent } from "../../../protocol/events.js";
import type { Env } from "../env.js";
import { errorMessage, type Log } from "../log.js";
import { objects } from "../objects/keys.js";

type McpSessionStub = ReturnType<typeof objects.mcpSession>;

/**
 * Delivers a session's events to the MCP sessions subscribed to it, in order: at most one
 * delivery RPC is in flight per subscriber; events that arrive meanwhile go in the next batch.
 */
export class McpFanout {
  readonly #env: Env;
  readonly #log: Log;
  readonly #queues = new Map<string, SessionEvent[]>();
  readonly #sending = new Set<string>();
  /** Each subscriber's stub, made once (a stub is reusable; deriving its id costs a hash). */
  readonly #stubs = new Map<string, McpSessionStub>();
  /** Called when a subscriber's MCP session no longer exists. */
  readonly #onGone: (mcpSessionId: string) => void;

  constructor(env: Env, log: Log, onGone: (mcpSessionId: string) => void) {
    this.#env = env;
    this.#log = log;
    this.#onGone = onGone;
  }

  send(mcpSessionId: string, event: SessionEvent): void {
    const queue = this.#queues.get(mcpSessionId);
    if (queue) queue.push(event);
    else this.#queues.set(mcpSessionId, [event]);
    if (!this.#sending.has(mcpSessionId)) void this.#drain(mcpSessionId);
  }

  async #drain(mcpSessionId: string): Promise<void> {
    this.#sending.add(mcpSessionId);
    try {
      for (;;) {
        const batch = this.#queues.get(mcpSessionId);
        if (!batch || batch.length === 0) break;
        this.#queues.delete(mcpSessionId);
        try {
          const { accepted } = await this.#stub(mcpSessionId).deliver(batch);
          if (!accepted) {
            this.#queues.delete(mcpSessionId);
            this.#stubs.delete(mcpSessionId);
            this.#onGone(mcpSessionId);
            break;
          }
        } catch (err) {
          // A stub may be broken after an error: the next delivery makes a new one.
          this.#stubs.delete(mcpSessionId);
          this.#log.warn("event delivery to MCP session failed", {
            mcp_session: mcpSessionId,
            error: errorMessage(err),
          });
        }
      }
    } finally {
      this.#sending.delete(mcpSessionId);
    }
  }

  #stub(mcpSessionId: string): McpSessionStub {
    let stub = this.#stubs.get(mcpSessionId);
    if (!stub) {
      stub = objects.mcpSession(this.#env, mcpSessionId);
      this.#stubs.set(mcpSessionId, stub);
    }
    return stub;
  }
}
