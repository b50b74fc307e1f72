import { callApprovalId } from "../../../protocol/approvals.js";
import { stillValid } from "../auth/tokens.js";
import { config, type Env } from "../env.js";
import { AppError } from "../errors.js";
import { errorMessage } from "../log.js";
import { AlarmSchedule } from "../objects/alarm-schedule.js";
import { objects } from "../objects/keys.js";
import { Approvals } from "./approvals.js";
import { CallerCalls } from "./caller-calls.js";
import { CallerInput } from "./caller-input.js";
import { EventLog } from "./event-log.js";
import { EventWaiters } from "./event-waiters.js";
import { GatedCalls } from "./gated-calls.js";
import { HostInput } from "./host-input.js";
import { HostTunnel } from "./host-tunnel.js";
import { Lifetime } from "./lifetime.js";
import { McpFanout } from "./mcp-fanout.js";
import { MessageNotices } from "./message-notices.js";
import { Presence } from "./presence.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionNetworkPart } from "./session-network.js";
import { isLive } from "./session-record.js";
import { SessionState } from "./session-state.js";
import { SessionStore } from "./session-store.js";
import { SessionViews } from "./session-views.js";
import { SubscriberSockets } from "./subscriber-sockets.js";
import type { RespondInput } from "./types.js";

/** The parts of one session object (session-do.ts says what each is for). */
export interface SessionParts {
  state: SessionState;
  events: EventLog;
  calls: CallerCalls;
  approvals: Approvals;
  gated: GatedCalls;
  presence: Presence;
  tunnel: HostTunnel;
  subscribers: SubscriberSockets;
  lifetime: Lifetime;
  messageNotices: MessageNotices;
  lifecycle: SessionLifecycle;
  views: SessionViews;
  host: HostInput;
  input: CallerInput;
  alarm: AlarmSchedule;
}

/**
 * Makes a session object's parts and wires each to the others through its narrow interface.
 * A part reaches another only through the closures given here, called after all are made.
 */
export function wireSession(ctx: DurableObjectState, env: Env): SessionParts {
  let events: EventLog;
  let calls: CallerCalls;
  let approvals: Approvals;
  let gated: GatedCalls;
  let presence: Presence;
  let tunnel: HostTunnel;
  let subscribers: SubscriberSockets;
  let lifetime: Lifetime;
  let messageNotices: MessageNotices;
  let lifecycle: SessionLifecycle;
  let host: HostInput;
  let callerInput: CallerInput;
  let alarm: AlarmSchedule;

  const cfg = config(env);
  const state = new SessionState(new SessionStore(ctx.storage.sql));
  const record = () => state.require();
  const save = () => state.save();
  const scheduleAlarm = (dueBy?: number) => alarm.schedule(dueBy);
  const waitUntil = (promise: Promise<unknown>) => ctx.waitUntil(promise);
  const waiters = new EventWaiters();
  const fanout = new McpFanout(env, state.log, (id) => presence.mcpChanged(id, "gone"));
  subscribers = new SubscriberSockets({
    state: ctx,
    record,
    eventsSince: (since, limit) => state.store.eventsSince(since, limit),
    keepAliveMs: cfg.keepAliveMs,
    ownerOpened: () => presence.plainOpened(),
    ownerClosed: () => presence.plainClosed(),
    respond: (input) => auditedAnswer(env, state, calls, input),
    stillValid: (principal) => stillValid(env, principal),
  });
  events = new EventLog(
    state.store,
    {
      broadcast: (json, index) => subscribers.broadcast(json, index),
      toMcp: (event) => {
        for (const sub of state.store.subscribers()) fanout.send(sub.mcpSessionId, event);
      },
      appended: () => waiters.wake(),
    },
    () => record().sessionId,
  );
  calls = new CallerCalls({
    sql: ctx.storage.sql,
    record,
    events,
    sendOutcome: (callId, outcome) => tunnel.sendOutcome(callId, outcome),
    callerMayWait: (now) => presence.mayWait(now),
    scheduleAlarm,
    activity: (now) => {
      lifetime.touch(now);
      save();
    },
    log: state.log,
  });
  approvals = new Approvals({
    sql: ctx.storage.sql,
    record,
    save,
    events,
    sendDecision: (id, decision) => tunnel.sendDecision(id, decision),
    scheduleAlarm,
    activity: (now) => {
      lifetime.touch(now);
      save();
    },
    callDecided: (call, decision) => {
      const outcome = gated.decided(call, decision);
      if (outcome) tunnel.sendOutcome(call.id, outcome);
    },
    allowForProject: (host, port, principal) => network.allowForProject(host, port, principal),
    log: state.log,
  });
  gated = new GatedCalls({ record, approvals: approvals, calls: calls });
  presence = new Presence({
    record,
    save,
    store: state.store,
    graceMs: cfg.callerGraceMs,
    ownerSubscribed: () => subscribers.ownerConnected(),
    countWaiting: () => calls.countWaiting(),
    failWaiting: (outcome) => calls.failAll(outcome),
    scheduleAlarm,
  });
  lifetime = new Lifetime({ record, countWaiting: () => calls.countWaiting() });
  const network = new SessionNetworkPart({ env, state, events, waitUntil });
  const views = new SessionViews({
    state,
    events,
    calls,
    approvals,
    presence,
    network,
    waiters,
    busy: () => lifetime.busy(),
    stillValid: (principal) => stillValid(env, principal),
  });
  lifecycle = new SessionLifecycle({
    env,
    state,
    events,
    calls,
    approvals,
    busy: () => lifetime.busy(),
    attachOwner: (owner) => callerInput.attach(owner.owner, owner.via),
    queueMessage: (text) => callerInput.queueMessage(text),
    closeLinks: () => {
      tunnel.close(1000, "session ended");
      subscribers.closeAll(1000, "session ended");
    },
    scheduleAlarm,
    waitUntil,
  });
  host = new HostInput({
    env,
    state,
    events,
    lifetime,
    lifecycle,
    views,
    approvals,
    scheduleAlarm,
    waitUntil,
  });
  tunnel = new HostTunnel(ctx, {
    placedHost: () => state.current?.hostId ?? null,
    liveStatus: () => {
      const status = record().status;
      return isLive(status) ? null : status;
    },
    sessionId: () => record().sessionId,
    storedEventSeq: () => record().storedHostEventSeq,
    config: () => callerInput.callerConfig(),
    pendingMessages: () => state.store.pendingMessages(),
    callerTool: (callId, tool, args) => {
      lifetime.touch(Date.now());
      return gated.call({ id: callId, tool, arguments: args });
    },
    approval: (id, agent, request) => approvals.onAsk(id, agent, request),
    cancel: (id, reason) => {
      calls.cancel(id, reason);
      approvals.cancel(id, reason);
      approvals.cancel(callApprovalId(id), reason);
    },
    events: (events) => host.agentEvents(events),
    end: (reason, notice) => {
      if (notice && state.live) events.emit(notice);
      return lifecycle.finish("ended", reason);
    },
    messageDelivered: (seq) => messageNotices.delivered(seq),
    usage: (report) => host.usage(report),
    gitPushed: (event) => host.gitPushed(event),
    networkBlocked: ({ blocked_id, ...event }) => network.blocked(blocked_id, event),
    networkUsage: (report) => network.usage(report),
    networkHello: () => network.hello(),
    setupEvent: (event) => {
      if (state.live) events.emit(event);
    },
    childMessage: (params) => host.spawnChild(params),
    ownEvents: (params) => host.ownEvents(params),
    oublietteTools: (apiKey) => host.oublietteTools(apiKey),
    oublietteCall: (apiKey, tool, args) => host.oublietteCall(apiKey, tool, args),
    storedUsage: () => state.current?.usage ?? null,
    budgetUsd: () => state.current?.agent?.max_cost_usd ?? null,
    log: state.log,
  });
  callerInput = new CallerInput({
    env,
    state,
    events,
    presence,
    tunnel,
    lifetime,
    scheduleAlarm,
  });
  messageNotices = new MessageNotices({
    store: state.store,
    delayMs: cfg.messageNoticeMs,
    emit: (body) => events.emit(body),
  });
  alarm = new AlarmSchedule(
    ctx,
    () => [
      calls.nextDue(),
      approvals.nextDue(),
      presence.nextDue(),
      state.live ? lifetime.nextDue() : null,
      state.live ? messageNotices.nextDue() : null,
    ],
    () => state.log,
  );
  return {
    state,
    events,
    calls,
    approvals,
    gated,
    presence,
    tunnel,
    subscribers,
    lifetime,
    messageNotices,
    lifecycle,
    views,
    host,
    input: callerInput,
    alarm,
  };
}

/**
 * An answer over a plain WebSocket: a call outside the tools, audited here as the
 * caller_tool_response tool is — a refused one only (each answer is kept by the session).
 */
function auditedAnswer(env: Env, state: SessionState, calls: CallerCalls, input: RespondInput): unknown {
  try {
    return calls.respond(input);
  } catch (err) {
    const entry = {
      at: Date.now(),
      token_id: input.principal.tokenId,
      action: "ws caller_tool_response",
      target: state.require().sessionId,
      outcome: err instanceof AppError ? err.code : "internal",
    };
    objects
      .audit(env)
      .record(entry)
      .catch((error: unknown) =>
        state.log.error("could not write the audit log", { error: errorMessage(error) }),
      );
    throw err;
  }
}
