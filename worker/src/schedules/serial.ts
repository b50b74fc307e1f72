/**
 * Runs async work one at a time per key, in the order it was asked for. A Durable Object lets
 * other requests in while it awaits another object, so a schedule's decisions about one target
 * (is the previous session busy? start, queue or skip?) are made under this, one after another.
 * In memory only: an evicted object has nothing in flight.
 */
export class Serial {
  readonly #tails = new Map<string, Promise<void>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}
