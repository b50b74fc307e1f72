/**
 * The host-agent's half of permission questions: each one the runner asks (`approval`, by its
 * approval id) is relayed over the session tunnel, and the session object's decision is the
 * answer. The session object alone decides; this side only
 * - relays a question asked again (after the runner reconnected) as the same question;
 * - cancels at the object when the runner cancels it, or when the runner's connection closed and
 *   the question is not asked again within a grace (a runner that reconnects asks it again; one
 *   whose cancellation was queued while it was away does not).
 * Logs each question and decision by kind and id, never what was asked.
 */
import type { Logger } from "../../../lib/log.js";
import type { HandlerContext } from "../../../lib/rpc/peer.js";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import type { ApprovalDecision, ApprovalRequest } from "../../../protocol/approvals.js";
import { RpcError, RpcErrorCode } from "../../../protocol/rpc/errors.js";
import type { ApprovalParams } from "../../../protocol/socket.js";

export interface ApprovalRelayOptions {
  /** Relays one question to the session object; resolves with its decision (never rejects). */
  relay(approvalId: string, agent: AgentRuntime, request: ApprovalRequest): Promise<ApprovalDecision>;
  /** Nobody waits for `approvalId` any more: cancel it at the session object. */
  cancel(approvalId: string, reason: string): void;
  logger: Logger;
  /** How long a question whose connection closed waits to be asked again before it is cancelled; default 10 s. */
  reclaimGraceMs?: number;
}

interface Entry {
  readonly decision: Promise<ApprovalDecision>;
  waiters: number;
  reclaimTimer?: NodeJS.Timeout;
}

export class ApprovalRelay {
  readonly #o: ApprovalRelayOptions;
  readonly #asked = new Map<string, Entry>();

  constructor(options: ApprovalRelayOptions) {
    this.#o = options;
  }

  /** Questions waiting for a decision here. */
  get size(): number {
    return this.#asked.size;
  }

  /** Serves one `approval` request of the runner: resolves with the decision, or throws when `ctx.signal` aborts. */
  async run(params: ApprovalParams, ctx: HandlerContext): Promise<ApprovalDecision> {
    const id = params.approval_id;
    const log = this.#o.logger.child({ approval_id: id });
    const known = this.#asked.get(id);
    if (known) log.info("approval asked again; the same question");
    const entry = known ?? this.#open(params, log);
    entry.waiters += 1;
    clearTimeout(entry.reclaimTimer);
    try {
      return await abortable(entry.decision, ctx.signal);
    } catch (err) {
      if (err instanceof RpcError && err.code === RpcErrorCode.RequestCancelled) {
        this.#forget(id, entry);
        this.#o.cancel(id, err.message);
      } else if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) {
        this.#awaitReclaim(id, entry);
      }
      throw err;
    } finally {
      entry.waiters -= 1;
    }
  }

  /** Forgets every question (the session is over here, or this host-agent is going). */
  clear(): void {
    for (const entry of this.#asked.values()) clearTimeout(entry.reclaimTimer);
    this.#asked.clear();
  }

  #open(params: ApprovalParams, log: Logger): Entry {
    const id = params.approval_id;
    log.info({ agent: params.agent, kind: params.request.kind }, "approval relayed to the session");
    const entry: Entry = { decision: this.#o.relay(id, params.agent, params.request), waiters: 0 };
    this.#asked.set(id, entry);
    void entry.decision.then((d) => {
      log.info({ decision: d.decision, scope: d.scope, by: d.by }, "approval decided");
      this.#forget(id, entry);
    });
    return entry;
  }

  #forget(id: string, entry: Entry): void {
    clearTimeout(entry.reclaimTimer);
    if (this.#asked.get(id) === entry) this.#asked.delete(id);
  }

  #awaitReclaim(id: string, entry: Entry): void {
    if (entry.waiters > 1) return;
    clearTimeout(entry.reclaimTimer);
    entry.reclaimTimer = setTimeout(() => {
      if (entry.waiters > 0 || this.#asked.get(id) !== entry) return;
      this.#asked.delete(id);
      this.#o.logger.info({ approval_id: id }, "the runner did not ask again; cancelling the approval");
      this.#o.cancel(id, "the runner did not ask again after its connection closed");
    }, this.#o.reclaimGraceMs ?? 10_000);
    entry.reclaimTimer.unref();
  }
}

/** Waits for `promise`, or rejects with the signal's reason once it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
