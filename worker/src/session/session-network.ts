/**
 * A session's network, as its object keeps it: its own policy (applied with its project's, the
 * stricter wins, by the host's gate), the gate's refusals (each a `network_blocked` event and an
 * audit entry, once per report id however often the host re-sends it), the hosts it reached
 * (totals, for `session get`), and the `allow_project` answers that add a host to its project's
 * allowlist (audited under whoever answered).
 */

import { allowEntry, type NetworkPolicy } from "../../../protocol/network.js";
import type { NetworkBlocked, NetworkUsage } from "../../../protocol/network-activity.js";
import type { SessionNetwork as HelloNetwork } from "../../../protocol/tunnel.js";
import { audit } from "../audit/audit.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { errorMessage } from "../log.js";
import { objects } from "../objects/keys.js";
import type { EventLog } from "./event-log.js";
import { isLive, type SessionRecord } from "./session-record.js";
import type { SessionState } from "./session-state.js";

/** How many refusal ids a session remembers (a host re-sends only the few not yet answered). */
const RECENT_BLOCKED_IDS = 64;

export interface SessionNetworkDeps {
  env: Env;
  state: SessionState;
  events: Pick<EventLog, "emit">;
  waitUntil(promise: Promise<unknown>): void;
}

/** What `session get` shows of the session's network. */
export interface NetworkInfo {
  /** The session's own policies (none: its project's alone). */
  policies: NetworkPolicy[];
  hosts: NetworkUsage["hosts"];
  other: NetworkUsage["other"] | null;
  /** Connections refused so far. */
  blocked: number;
}

export class SessionNetworkPart {
  readonly #d: SessionNetworkDeps;

  constructor(deps: SessionNetworkDeps) {
    this.#d = deps;
  }

  /** What the host's gate needs to know again after a restart (`session_hello`). */
  hello(): HelloNetwork {
    const record = this.#d.state.require();
    return {
      session: record.network?.policies ?? [],
      approvals: record.agent?.approvals ?? "auto",
    };
  }

  /** The gate refused a connection: an event and an audit entry, once per report id. */
  blocked(blockedId: string, event: NetworkBlocked): void {
    const { state } = this.#d;
    const record = state.require();
    const network = networkOf(record);
    const told = network.recentBlockedIds ?? [];
    if (told.includes(blockedId)) return;
    network.recentBlockedIds = [...told, blockedId].slice(-RECENT_BLOCKED_IDS);
    network.blockedCount = (network.blockedCount ?? 0) + 1;
    state.save();
    if (isLive(record.status)) this.#d.events.emit({ type: "network_blocked", ...event });
    audit(
      this.#d.env,
      {
        token_id: record.ownerTokenId,
        action: "network.blocked",
        target: `${record.projectId} ${allowEntry(event.host, event.port)}${event.method !== null ? ` ${event.method}` : ""}`,
        outcome: event.code,
        via_session: record.sessionId,
      },
      this.#d.waitUntil,
      state.log,
    );
  }

  /** The hosts the session reached, as totals (the latest report stands). */
  usage(report: NetworkUsage): void {
    const { state } = this.#d;
    const record = state.require();
    const network = networkOf(record);
    network.usage = report;
    state.save();
  }

  /** What `session get` shows. */
  info(): NetworkInfo {
    const network = this.#d.state.require().network;
    return {
      policies: network?.policies ?? [],
      hosts: network?.usage?.hosts ?? [],
      other: network?.usage?.other ?? null,
      blocked: network?.blockedCount ?? 0,
    };
  }

  /** An `allow_project` answer: the host joins the project's allowlist, audited under who answered. */
  allowForProject(host: string, port: number, principal: CallerPrincipal): void {
    const { env, state } = this.#d;
    const record = state.require();
    const entry = allowEntry(host, port);
    this.#d.waitUntil(
      objects
        .project(env, record.projectId)
        .allowNetworkHost({ host, port })
        .then((added) => {
          audit(
            env,
            {
              token_id: principal.tokenId,
              action: "project.network_allow",
              target: `${record.projectId} ${entry}`,
              outcome: added.ok ? (added.value.added ? "ok" : "unchanged") : added.error.code,
              via_session: record.sessionId,
            },
            this.#d.waitUntil,
            state.log,
          );
        })
        .catch((err: unknown) =>
          state.log.error("could not add a host to the project's allowlist", {
            entry,
            error: errorMessage(err),
          }),
        ),
    );
  }
}

/** The record's network part, made on first use. */
function networkOf(record: SessionRecord): NonNullable<SessionRecord["network"]> {
  if (!record.network) record.network = { policies: [], usage: null };
  return record.network;
}
