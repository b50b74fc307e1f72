import type { CallerToolsConfig } from "../../../protocol/caller-tools.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import type { EventLog } from "./event-log.js";
import type { HostTunnel } from "./host-tunnel.js";
import type { Lifetime } from "./lifetime.js";
import type { Presence } from "./presence.js";
import { requireOwner, requireWriter } from "./session-access.js";
import { SessionEndedError } from "./session-errors.js";
import { isLive } from "./session-record.js";
import type { SessionState } from "./session-state.js";
import type { CallerPresence, SendMessageInput, Via } from "./types.js";

export interface CallerInputDeps {
  env: Env;
  state: SessionState;
  events: Pick<EventLog, "emit">;
  presence: Pick<Presence, "attachMcp" | "check">;
  tunnel: Pick<HostTunnel, "sendConfig" | "sendMessage">;
  lifetime: Pick<Lifetime, "touch">;
  scheduleAlarm(): void;
}

/**
 * What callers tell the session: messages for the droid (queued until the host acknowledges
 * them), the caller's tools (owner only), how the caller's absence treats waiting calls, and
 * which of the owner's MCP sessions follow it.
 */
export class CallerInput {
  readonly #d: CallerInputDeps;

  constructor(deps: CallerInputDeps) {
    this.#d = deps;
  }

  /** A message and/or a caller declaration; the message's seq, or null when there was none. */
  send(input: SendMessageInput): number | null {
    const { state, events } = this.#d;
    const record = requireWriter(state.require(), input.principal, "send messages to");
    if (!isLive(record.status)) throw new SessionEndedError(record);
    this.attach(input.principal, input.via);
    if (input.caller) {
      // Caller tool requests go to the owner, so only the owner declares the tools.
      requireOwner(record, input.principal, "declare caller tools for", state.log);
      record.callerId = input.caller.callerId;
      record.callerTools = input.caller.tools;
      state.save();
      events.emit({
        type: "caller_tools_declared",
        caller_id: input.caller.callerId,
        tools: input.caller.tools,
      });
      this.#d.tunnel.sendConfig(this.callerConfig());
    }
    if (input.callerPresence) this.#setCallerPresence(input.principal, input.callerPresence);
    return input.message === null ? null : this.queueMessage(input.message);
  }

  /** Queues a message for the droid (sent now if the tunnel is up, else when it is back). */
  queueMessage(text: string): number {
    const { state } = this.#d;
    const record = state.require();
    record.lastMessageSeq += 1;
    this.#d.lifetime.touch(Date.now());
    const seq = record.lastMessageSeq;
    state.store.queueMessage(seq, text, Date.now());
    state.save();
    this.#d.events.emit({ type: "message_sent", seq, text });
    this.#d.scheduleAlarm();
    this.#d.tunnel.sendMessage(seq, text);
    return seq;
  }

  /** The caller's tools and timing as the host and the droid need them. */
  callerConfig(): CallerToolsConfig {
    const record = this.#d.state.require();
    return {
      caller_id: record.callerId,
      tools: record.callerTools,
      timeout_ms: record.callerTimeoutMs,
      backstop_ms: record.callerTimeoutMs + config(this.#d.env).reconnectBudgetMs,
    };
  }

  /** Subscribes the owner's MCP session to this session's events. */
  attach(principal: CallerPrincipal, via: Via | null): void {
    if (!via || principal.tokenId !== this.#d.state.require().ownerTokenId) return;
    this.#d.presence.attachMcp(via);
  }

  /** The owner chose what the caller's absence does to waiting calls. */
  #setCallerPresence(principal: CallerPrincipal, presence: CallerPresence): void {
    const { state } = this.#d;
    const record = requireOwner(state.require(), principal, "choose caller_presence for", state.log);
    if (presence === record.callerPresence) return;
    record.callerPresence = presence;
    state.save();
    state.log.info("caller presence changed", { caller_presence: record.callerPresence });
    // Back to `stream`: calls of a caller that is gone fail now (or when its grace period ends).
    this.#d.presence.check(Date.now());
    this.#d.scheduleAlarm();
  }
}
