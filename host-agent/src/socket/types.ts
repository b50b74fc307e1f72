import type { Logger } from "../../../lib/log.js";
import type { CallerToolOutcome } from "../../../protocol/caller-tools.js";
import type { JsonObject } from "../../../protocol/json.js";

/** One caller tool call, as asked for by the droid. */
export interface CallerToolCall {
  tool: string;
  arguments: JsonObject;
}

/** What the host-agent does with requests arriving on a session's relay socket. */
export interface RelayHandlers {
  /**
   * Runs one caller tool call; resolves with the outcome (caller failures are outcomes, not
   * rejections). `signal` aborts when the connection that asked closes, when the server closes,
   * or when the relay's own backstop deadline passes.
   */
  callerTool(call: CallerToolCall, signal: AbortSignal): Promise<CallerToolOutcome>;
}

export interface RelaySocketServerOptions {
  /** Unix socket path, e.g. `<socketDir>/relay.sock`; created with mode 0o666, a stale socket is removed first. */
  path: string;
  sessionId: string;
  /** Secret the agent process must present in `hello`. Never logged. */
  sessionToken: string;
  /** Cap on one line in either direction; default DEFAULT_MAX_LINE_BYTES. */
  maxLineBytes?: number;
  handlers: RelayHandlers;
  logger: Logger;
  /** A connection that has not completed `hello` by then is closed; default 10 s. */
  helloTimeoutMs?: number;
  /** Requests one connection may have in flight; more are refused; default 1024. */
  maxInFlightPerConnection?: number;
  /**
   * Backstop deadline of a `caller_tool` call beyond the config's `timeout_ms` (the handler is
   * expected to answer by then with its own timeout outcome); default 2 s.
   */
  callGraceMs?: number;
}
