/**
 * The runner's permission questions: each agent's question goes to the host-agent as `approval`
 * under an approval id of its own, and the session's decision comes back. A question is durable
 * like a caller tool call (`lib/rpc/resumable-calls.ts`): one pending when the socket drops (the
 * host-agent restarted, say) is re-sent under the same id on the next connection, and decided
 * once. What cannot be asked is denied, never left hanging: a refusal (an older host-agent that
 * does not know the method, a session this host does not run) and the backstop are a deny by
 * "error"; a question whose agent is gone is a deny by "ended", cancelled at the host-agent.
 * Emits no events (the session object makes the approval events); logs each question and
 * decision by kind and id, never what was asked (a command may hold a secret).
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../../../lib/log.js";
import { type CallPeer, ResumableCalls } from "../../../lib/rpc/resumable-calls.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type ApprovalRequest,
} from "../../../protocol/approvals.js";
import { type ApprovalParams, SocketMethods } from "../../../protocol/socket.js";

/** The longest a question may wait (the longest approval timeout), plus room for reconnects. */
export const APPROVAL_BACKSTOP_MS = 24 * 3600_000 + 10 * 60_000;
/** A decision's message is at most this long (ApprovalDecisionSchema). */
const MAX_MESSAGE_CHARS = 2048;

export interface ApprovalAsksOptions {
  /** The runner's current conversation with the host-agent; null while disconnected. */
  peer(): CallPeer | null;
  logger: Logger;
  /** Default APPROVAL_BACKSTOP_MS. */
  backstopMs?: number;
}

/** One question put to the session. */
export interface PendingAsk {
  approvalId: string;
  decision: Promise<ApprovalDecision>;
}

/** A deny nobody decided (the question could not be asked, or nobody waits for it any more). */
export function denial(by: "error" | "ended", message: string): ApprovalDecision {
  const clipped =
    message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : message;
  return { decision: "deny", scope: "once", by, message: clipped };
}

/** A fresh approval id (`apr_` and 32 hex digits: ApprovalIdSchema). */
export function newApprovalId(): string {
  return `apr_${randomUUID().replaceAll("-", "")}`;
}

export class ApprovalAsks {
  readonly #log: Logger;
  readonly #backstopMs: number;
  readonly #calls: ResumableCalls<ApprovalDecision>;

  constructor(options: ApprovalAsksOptions) {
    this.#log = options.logger.child({ component: "approvals" });
    this.#backstopMs = options.backstopMs ?? APPROVAL_BACKSTOP_MS;
    this.#calls = new ResumableCalls<ApprovalDecision>({
      method: SocketMethods.approval.name,
      peer: options.peer,
      answered: (result) => {
        const parsed = ApprovalDecisionSchema.safeParse(result);
        return parsed.success
          ? parsed.data
          : denial("error", "the approval could not be put to the session: its answer is not a decision");
      },
      refused: (err) =>
        denial(
          "error",
          `the approval could not be put to the session: ${err instanceof Error ? err.message : String(err)}`,
        ),
      // Cancellations wait for a reconnect; a long outage keeps only the latest.
      maxQueuedCancels: 1_000,
    });
  }

  /** Questions not decided yet. */
  get size(): number {
    return this.#calls.size;
  }

  /** Puts `request` of `sessionId`'s agent to the session; the decision settles once. */
  ask(sessionId: string, agent: AgentRuntime, request: ApprovalRequest): PendingAsk {
    const approvalId = newApprovalId();
    const params: ApprovalParams = { session_id: sessionId, approval_id: approvalId, agent, request };
    const log = this.#log.child({ session: sessionId, approval_id: approvalId });
    log.info({ agent, kind: request.kind }, "approval asked");
    const decision = this.#calls.call(approvalId, params, {
      backstop: {
        ms: this.#backstopMs,
        cancel: () => {
          const message = `no decision within ${Math.round(this.#backstopMs / 60_000)} minutes; the approval could not be put to the session`;
          log.warn("approval hit the runner's backstop");
          return { outcome: denial("error", message), reason: message };
        },
      },
    });
    void decision.then((d) =>
      log.info({ decision: d.decision, scope: d.scope, by: d.by }, "approval decided"),
    );
    return { approvalId, decision };
  }

  /** Nobody waits for `approvalId` any more: it settles as a deny by "ended" and is cancelled at the host-agent. */
  end(approvalId: string, why: string): void {
    this.#calls.cancel(approvalId, { outcome: denial("ended", why), reason: why });
  }

  /** A (re)connected conversation: queued cancellations, then every question not decided yet. */
  resend(peer: CallPeer): void {
    this.#calls.resend(peer);
  }
}
