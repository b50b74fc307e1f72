/**
 * One project's side of the egress gate on this host: its policies (the project's `network`, its
 * setup's, each session's own), who a proxy connection belongs to, and what the policies say of
 * it — asking the session (and so a person) when its approval policy asks and the host is not
 * listed. Each request is attributed by the kernel's word (the uid the runner found) and the
 * proxy credential must agree: one session's credential is useless to another's processes.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import { type ApprovalDecision, type ApprovalRequest, approvalMatches } from "../../../protocol/approvals.js";
import { type EgressPeer, PROXY_TOKEN_PATTERN } from "../../../protocol/egress.js";
import {
  DEFAULT_NETWORK_POLICY,
  DEFAULT_SETUP_NETWORK_POLICY,
  evaluateNetwork,
  type NetworkPolicy,
  type NetworkTarget,
  networkSubject,
  normalizeHost,
  type SourcedPolicy,
} from "../../../protocol/network.js";
import type { NetworkBlocked, NetworkUsage } from "../../../protocol/network-activity.js";
import { EgressMeter } from "./egress-meter.js";

/** Who a connection is for: a session's agent, a user's command, or a setup run. */
export type EgressPrincipal =
  | { kind: "session"; sessionId: string }
  | { kind: "exec" }
  | { kind: "setup"; runId: string };

/** What the gate needs of a session (its runtime on this host provides it). */
export interface SessionNetworkLink {
  /** Puts a `network` approval to the session's object; resolves with its decision. */
  ask(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
  blocked(event: NetworkBlocked): void;
  usage(report: NetworkUsage): void;
}

/** A session's network settings: its own policy (stricter than the project's, never looser) and whether it may ask. */
export interface SessionNetworkSettings {
  /** Its own policies (every one must allow, with the project's). */
  policies: NetworkPolicy[];
  approvals: "auto" | "ask";
  /** Not known yet (a re-adopted session before its object's hello): nothing passes meanwhile. */
  unknown?: boolean;
}

export type EgressDecision =
  | { allowed: true; rule: string }
  | { allowed: false; blocked: Omit<NetworkBlocked, "host" | "port" | "method"> };

interface SessionEntry extends SessionNetworkSettings {
  token: string;
  link: SessionNetworkLink;
  meter: EgressMeter;
  /** Subjects (globs) an `allow_session` or `allow_project` answer opened for this session. */
  allowances: string[];
  /** Approvals in flight, by subject: parallel connections to one host ask once. */
  asking: Map<string, Promise<ApprovalDecision>>;
}

export interface ProjectNetworkOptions {
  projectId: string;
  /** Whether sessions run as uids of their own (Docker): then a process of no session gets nothing. */
  separate: boolean;
  logger: Logger;
  /** A user's command or a setup run was refused (an audit entry on the Worker). */
  onProjectBlocked(kind: "exec" | "setup", event: NetworkBlocked): void;
}

/** Most proxied connections one project has open at once. */
export const MAX_PROJECT_CONNECTIONS = 128;

export class ProjectNetwork {
  readonly #o: ProjectNetworkOptions;
  readonly #sessions = new Map<string, SessionEntry>();
  readonly #setupRuns = new Map<string, string>();
  readonly #execToken = newToken();
  readonly #projectMeter: EgressMeter;
  #policy: NetworkPolicy = DEFAULT_NETWORK_POLICY;
  #setupPolicy: NetworkPolicy = DEFAULT_SETUP_NETWORK_POLICY;
  #open = 0;

  constructor(options: ProjectNetworkOptions) {
    this.#o = options;
    this.#projectMeter = new EgressMeter(() => {}, 60_000);
  }

  get projectId(): string {
    return this.#o.projectId;
  }

  /** The project's policies, as its latest spec says. */
  setPolicies(policies: {
    network?: NetworkPolicy | undefined;
    setup_network?: NetworkPolicy | undefined;
  }): void {
    if (policies.network !== undefined) this.#policy = policies.network;
    if (policies.setup_network !== undefined) this.#setupPolicy = policies.setup_network;
  }

  get policy(): NetworkPolicy {
    return this.#policy;
  }

  get setupPolicy(): NetworkPolicy {
    return this.#setupPolicy;
  }

  /** The credential of a user's `container exec` (it counts as the project). */
  get execToken(): string {
    return this.#execToken;
  }

  /** A setup run's credential: its commands' requests count under the setup policy until `done`. */
  setupRun(): { token: string; done(): void } {
    const runId = randomBytes(6).toString("hex");
    const token = newToken();
    this.#setupRuns.set(token, runId);
    return { token, done: () => this.#setupRuns.delete(token) };
  }

  /**
   * A session served here; returns its proxy credential (its agent gets it in the proxy URL). A
   * re-adopted session keeps the credential its agent already holds (`token`).
   */
  addSession(
    sessionId: string,
    settings: SessionNetworkSettings,
    link: SessionNetworkLink,
    token?: string | undefined,
  ): string {
    const known = this.#sessions.get(sessionId);
    if (known) {
      known.link = link;
      return known.token;
    }
    const entry: SessionEntry = {
      ...settings,
      token: token !== undefined && PROXY_TOKEN_PATTERN.test(token) ? token : newToken(),
      link,
      meter: new EgressMeter((report) => this.#sessions.get(sessionId)?.link.usage(report)),
      allowances: [],
      asking: new Map(),
    };
    this.#sessions.set(sessionId, entry);
    return entry.token;
  }

  /** What the session object says of the session (after a host-agent restart, the only source). */
  updateSession(sessionId: string, settings: Partial<SessionNetworkSettings>): void {
    const entry = this.#sessions.get(sessionId);
    if (!entry) return;
    if (settings.policies !== undefined) entry.policies = settings.policies;
    if (settings.approvals !== undefined) entry.approvals = settings.approvals;
    entry.unknown = false;
  }

  removeSession(sessionId: string): void {
    const entry = this.#sessions.get(sessionId);
    if (!entry) return;
    entry.meter.close();
    this.#sessions.delete(sessionId);
  }

  /** The session's credential, for a restarted runner's agents (null: not a session served here). */
  sessionToken(sessionId: string): string | null {
    return this.#sessions.get(sessionId)?.token ?? null;
  }

  /**
   * Who a connection belongs to: the runner's word (the kernel's uid) and the credential the
   * client presented must agree. Null credential: the uid alone decides.
   */
  principal(
    peer: EgressPeer,
    credential: string | null,
  ): { ok: true; principal: EgressPrincipal } | { ok: false; reason: string } {
    const byCredential = credential === null ? null : this.#byCredential(credential);
    if (credential !== null && byCredential === null)
      return {
        ok: false,
        reason: "the proxy credential is not one this project's gate issued (or its session ended)",
      };
    switch (peer.kind) {
      case "session": {
        if (!this.#sessions.has(peer.session_id))
          return { ok: false, reason: `session ${peer.session_id} is not running on this host` };
        if (
          byCredential !== null &&
          !(byCredential.kind === "session" && byCredential.sessionId === peer.session_id)
        )
          return {
            ok: false,
            reason: "this proxy credential belongs to another session; each session's requests are its own",
          };
        return { ok: true, principal: { kind: "session", sessionId: peer.session_id } };
      }
      case "exec": {
        if (byCredential?.kind === "session")
          return {
            ok: false,
            reason: "this proxy credential belongs to a session, not to the project's commands",
          };
        return { ok: true, principal: byCredential ?? { kind: "exec" } };
      }
      case "unknown": {
        if (this.#o.separate)
          return {
            ok: false,
            reason: `a process of no session (uid ${peer.uid ?? "unknown"}) has no network here`,
          };
        return { ok: true, principal: byCredential ?? { kind: "exec" } };
      }
    }
  }

  /** The meter a principal's traffic counts on. */
  meter(principal: EgressPrincipal): EgressMeter {
    if (principal.kind === "session")
      return this.#sessions.get(principal.sessionId)?.meter ?? this.#projectMeter;
    return this.#projectMeter;
  }

  /** Takes one of the project's connection slots; false when all are in use. */
  acquire(): boolean {
    if (this.#open >= MAX_PROJECT_CONNECTIONS) return false;
    this.#open += 1;
    return true;
  }

  release(): void {
    this.#open = Math.max(0, this.#open - 1);
  }

  get openConnections(): number {
    return this.#open;
  }

  /**
   * What the policies say of a request: allowed (by a rule, an earlier allowance, or a person),
   * or refused with the reason. Only a host the allowlist does not list is put to a person, and
   * only for a session whose approval policy asks; `signal` aborts a question nobody waits for.
   */
  async decide(
    principal: EgressPrincipal,
    target: NetworkTarget,
    signal: AbortSignal,
  ): Promise<EgressDecision> {
    if (principal.kind === "session" && this.#sessions.get(principal.sessionId)?.unknown === true)
      return {
        allowed: false,
        blocked: {
          code: "off",
          reason:
            "the session's network is not known on this host yet (its host-agent restarted); try again in a moment",
          source: "session",
        },
      };
    const policies = this.#policies(principal);
    const verdict = evaluateNetwork(policies, target);
    if (verdict.allowed) return { allowed: true, rule: verdict.rule };
    const refused: EgressDecision = {
      allowed: false,
      blocked: { code: verdict.code, reason: verdict.reason, source: verdict.source },
    };
    if (principal.kind !== "session" || verdict.code !== "not_listed") return refused;
    const entry = this.#sessions.get(principal.sessionId);
    if (!entry) return refused;
    const subject = networkSubject(target.host, target.port);
    if (entry.allowances.some((pattern) => approvalMatches("network", pattern, subject)))
      return { allowed: true, rule: "allowed for the session" };
    if (entry.approvals !== "ask") return refused;
    const decision = await this.#ask(entry, target, subject, signal);
    if (decision.decision === "allow") {
      if (decision.scope !== "once") entry.allowances.push(subject);
      if (decision.scope === "project") this.#allowForProject(subject);
      return { allowed: true, rule: `approved (${decision.by})` };
    }
    const why = decision.message !== undefined ? `: ${decision.message}` : "";
    return {
      allowed: false,
      blocked: {
        code: "approval",
        reason: `${subject} was not approved (${decision.by})${why}`,
        source: verdict.source,
      },
    };
  }

  /** A refusal happened: counted, and reported where it belongs. */
  reportBlocked(principal: EgressPrincipal, event: NetworkBlocked): void {
    this.meter(principal).blocked(event.host, event.port);
    if (principal.kind === "session") this.#sessions.get(principal.sessionId)?.link.blocked(event);
    else this.#o.onProjectBlocked(principal.kind, event);
  }

  #policies(principal: EgressPrincipal): SourcedPolicy[] {
    if (principal.kind === "setup") return [{ source: "setup", policy: this.#setupPolicy }];
    const project: SourcedPolicy = { source: "project", policy: this.#policy };
    if (principal.kind === "exec") return [project];
    const own = this.#sessions.get(principal.sessionId)?.policies ?? [];
    return [project, ...own.map((policy): SourcedPolicy => ({ source: "session", policy }))];
  }

  #ask(
    entry: SessionEntry,
    target: NetworkTarget,
    subject: string,
    signal: AbortSignal,
  ): Promise<ApprovalDecision> {
    const asking = entry.asking.get(subject);
    if (asking) return asking;
    const host = normalizeHost(target.host);
    const method = target.method.toUpperCase();
    const request: ApprovalRequest = {
      kind: "network",
      host,
      port: target.port,
      ...(method !== "CONNECT" ? { method } : {}),
      summary: method === "CONNECT" ? `Connect to ${subject}` : `${method} http://${subject}`,
    };
    this.#o.logger.info({ subject }, "asking the session about a host its network policy does not list");
    const decision = entry.link.ask(request, signal).finally(() => entry.asking.delete(subject));
    entry.asking.set(subject, decision);
    return decision;
  }

  /** An `allow_project` answer: the project's allowlist holds the host here too, until the next spec. */
  #allowForProject(subject: string): void {
    if (this.#policy.mode !== "allowlist" || this.#policy.allow.includes(subject)) return;
    this.#policy = { ...this.#policy, allow: [...this.#policy.allow, subject] };
  }

  #byCredential(credential: string): EgressPrincipal | null {
    if (sameSecret(credential, this.#execToken)) return { kind: "exec" };
    const run = this.#setupRuns.get(credential);
    if (run !== undefined) return { kind: "setup", runId: run };
    for (const [sessionId, entry] of this.#sessions)
      if (sameSecret(credential, entry.token)) return { kind: "session", sessionId };
    return null;
  }
}

function newToken(): string {
  return `oubp_${randomBytes(24).toString("hex")}`;
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
