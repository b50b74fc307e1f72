import { errorMessage, type Log } from "../log.js";

/**
 * One Durable Object alarm serving several parts: each part says when it is next due (or null),
 * and `schedule()` sets the alarm to the earliest of them, unless an alarm already due sooner is
 * set. The object calls `fired()` first thing in its `alarm()`.
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

  /** Sets the alarm to the earliest moment anything is due. */
  schedule(): void {
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
