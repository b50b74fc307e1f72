/**
 * Requests that outlive their connection. Each call has an id of its own (the request id on
 * every connection), is sent on the current conversation if there is one, and is re-sent under
 * the same id on every (re)connect until it settles, so the peer — which de-duplicates by id —
 * answers it exactly once. A call settles once: with the peer's answer or refusal, or on this
 * side (abort signal, backstop, cancel, the link ending). A cancellation goes to the peer now,
 * or right after the next reconnect. A closed connection is never an outcome: the call waits for
 * the next one. Knows nothing of what is called; the owner turns answers into outcomes.
 */
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { CANCELLED, type JsonRpcId } from "../../protocol/rpc/messages.js";

/**
 * What a call needs of one connection's conversation (an RpcPeer): requests and notifications by
 * bare name, since calls are resent verbatim and their owner parses the answers.
 */
export interface CallPeer {
  request(method: string, params: unknown, options: { id: JsonRpcId }): Promise<unknown>;
  notify(method: string, params: unknown): boolean;
}

/** A call ended on this side: the outcome its caller gets, and the reason the peer is told. */
export interface Cancellation<T> {
  outcome: T;
  reason: string;
}

export interface ResumableCallsOptions<T> {
  /** The request method every call goes out as. */
  method: string;
  /** The conversation calls go out on now; null while disconnected. */
  peer(): CallPeer | null;
  /** A call's outcome from the peer's result (parse it here); must not throw. */
  answered(result: unknown): T;
  /** A call's outcome when the peer refused it (any error but a closed connection); must not throw. */
  refused(error: unknown): T;
  /** Most cancellations kept while disconnected (the oldest go first); default: no bound. */
  maxQueuedCancels?: number;
}

export interface CallOptions<T> {
  /** Cancels the call when `signal` aborts; already aborted: settles at once and sends nothing. */
  abort?: { signal: AbortSignal; cancel(): Cancellation<T> };
  /** Cancels the call when it is still unsettled after `ms`, however many reconnects it saw. */
  backstop?: { ms: number; cancel(): Cancellation<T> };
}

interface Entry<T> {
  readonly params: unknown;
  readonly promise: Promise<T>;
  /** The conversation the call is pending on (not sent again there: its id is taken). */
  sentOn: CallPeer | null;
  /** Clears the call's timer and listener and resolves its promise. */
  finish(outcome: T): void;
}

/** Calls by id that survive reconnects; see the module comment. */
export class ResumableCalls<T> {
  readonly #o: ResumableCallsOptions<T>;
  readonly #calls = new Map<string, Entry<T>>();
  /** Cancellations not delivered yet (no connection), by call id. */
  readonly #cancels = new Map<string, string>();

  constructor(options: ResumableCallsOptions<T>) {
    this.#o = options;
  }

  /** Calls not settled yet. */
  get size(): number {
    return this.#calls.size;
  }

  /**
   * Registers call `id` and sends it now if connected; resolves with its outcome. While a call
   * under `id` is unsettled, calling again returns that call's promise (`params` are ignored).
   */
  call(id: string, params: unknown, options: CallOptions<T> = {}): Promise<T> {
    const known = this.#calls.get(id);
    if (known) return known.promise;
    const { abort, backstop } = options;
    if (abort?.signal.aborted) return Promise.resolve(abort.cancel().outcome);
    let resolve!: (outcome: T) => void;
    const promise = new Promise<T>((r) => {
      resolve = r;
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      if (abort) this.#cancelEntry(id, entry, abort.cancel());
    };
    const entry: Entry<T> = {
      params,
      promise,
      sentOn: null,
      finish: (outcome) => {
        clearTimeout(timer);
        abort?.signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      },
    };
    this.#calls.set(id, entry);
    this.#cancels.delete(id);
    if (backstop) timer = setTimeout(() => this.#cancelEntry(id, entry, backstop.cancel()), backstop.ms);
    abort?.signal.addEventListener("abort", onAbort, { once: true });
    const peer = this.#o.peer();
    if (peer) this.#send(peer, id, entry);
    return promise;
  }

  /**
   * Nobody waits for call `id` any more: settles it (if unsettled) with `outcome` and tells the
   * peer, now or right after the next reconnect (also for a call no longer known here).
   */
  cancel(id: string, { outcome, reason }: Cancellation<T>): void {
    const entry = this.#calls.get(id);
    if (entry) this.#settle(id, entry, outcome);
    this.#queueCancel(id, reason);
  }

  /**
   * Settles every unsettled call with `outcome(id)`. With `reason`, each is cancelled at the peer
   * if connected now, never later (for a link that is ending: nothing will reconnect).
   */
  settleAll(outcome: (id: string) => T, reason?: string): void {
    const peer = reason === undefined ? null : this.#o.peer();
    for (const [id, entry] of [...this.#calls]) {
      this.#settle(id, entry, outcome(id));
      peer?.notify(CANCELLED, { requestId: id, reason });
    }
  }

  /** A (re)connected conversation: sends the queued cancellations, then every unsettled call. */
  resend(peer: CallPeer): void {
    this.#flushCancels(peer);
    for (const [id, entry] of [...this.#calls]) {
      if (entry.sentOn !== peer) this.#send(peer, id, entry);
    }
  }

  #send(peer: CallPeer, id: string, entry: Entry<T>): void {
    entry.sentOn = peer;
    peer.request(this.#o.method, entry.params, { id }).then(
      (result) => {
        if (this.#calls.get(id) === entry) this.#settle(id, entry, this.#o.answered(result));
      },
      (err: unknown) => {
        if (this.#calls.get(id) !== entry) return;
        if (err instanceof RpcError && err.code === RpcErrorCode.ConnectionClosed) {
          // The connection dropped: the call stays and is re-sent on the next one.
          if (entry.sentOn === peer) entry.sentOn = null;
          return;
        }
        this.#settle(id, entry, this.#o.refused(err));
      },
    );
  }

  /** Settles the call if `entry` is still the one under `id`; true if it did. */
  #settle(id: string, entry: Entry<T>, outcome: T): boolean {
    if (this.#calls.get(id) !== entry) return false;
    this.#calls.delete(id);
    entry.finish(outcome);
    return true;
  }

  #cancelEntry(id: string, entry: Entry<T>, { outcome, reason }: Cancellation<T>): void {
    if (this.#settle(id, entry, outcome)) this.#queueCancel(id, reason);
  }

  #queueCancel(id: string, reason: string): void {
    this.#cancels.set(id, reason);
    const peer = this.#o.peer();
    if (peer) this.#flushCancels(peer);
    // Bounded: with no connection for a long time, the oldest cancellations are the least useful.
    const max = this.#o.maxQueuedCancels ?? Number.POSITIVE_INFINITY;
    for (const oldest of this.#cancels.keys()) {
      if (this.#cancels.size <= max) break;
      this.#cancels.delete(oldest);
    }
  }

  #flushCancels(peer: CallPeer): void {
    for (const [id, reason] of this.#cancels) {
      if (peer.notify(CANCELLED, { requestId: id, reason })) this.#cancels.delete(id);
    }
  }
}
