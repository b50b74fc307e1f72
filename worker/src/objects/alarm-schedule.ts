import { errorMessage, type Log } from "../log.js";

/**
 * One Durable Object alarm serving several parts: each part says when it is next due (or null),
 * and `schedule()` sets the alarm to the earliest of them, unless an alarm already due sooner is
 * set. The object calls `fired()` first thing in its `alarm()`, which must call `schedule()` again.
 *
 * The alarm is never later than anything due (each change that makes something due sooner
 * schedules), so a part that only adds one due moment can say when (`dueBy`): an alarm set
 * before it stands, and nothing is asked of the other parts. That is the common case on a
 * relayed call's path (a call opens with a deadline after the alarm's), where asking every part
 * cost a few queries per call.
 */
export class AlarmSchedule {
  readonly #storage: DurableObjectStorage;
  readonly #due: () => (number | null)[];
  readonly #log: () => Log;
  #at: number | null = null;

  constructor(state: DurableObjectState, due: () => (number | null)[], log: () => Log) {
    this.#storage = state.storage;
    this.#due = due;
    this.#log = log;
    void state.blockConcurrencyWhile(async () => {
      this.#at = await state.storage.getAlarm();
    });
  }

  /** The alarm went off: none is set now. */
  fired(): void {
    this.#at = null;
  }

  /**
   * Sets the alarm to the earliest moment anything is due; `dueBy`: the only change since the
   * last call is that something is due then.
   */
  schedule(dueBy?: number): void {
    if (dueBy !== undefined && this.#at !== null && this.#at <= dueBy && this.#at > Date.now()) return;
    const due = this.#due().filter((t): t is number => t !== null);
    if (due.length === 0) return;
    const at = Math.min(...due);
    if (this.#at !== null && this.#at <= at && this.#at > Date.now()) return;
    this.#at = at;
    this.#storage.setAlarm(at).catch((err: unknown) => {
      this.#at = null;
      this.#log().error("could not set the alarm", { error: errorMessage(err) });
    });
  }
}
