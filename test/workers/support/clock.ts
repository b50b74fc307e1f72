import { vi } from "vitest";

/**
 * Tests and Durable Objects share one isolate under the workers pool, so vitest's fake `Date`
 * is the objects' clock too: alarms, deadlines and grace periods compute from it. (Fake
 * `setTimeout` is not usable: a callback fired from the test cannot settle a promise that
 * belongs to a Durable Object's I/O context.) Restore with `vi.useRealTimers()`.
 *
 * `aheadMs` starts the clock that far in the future: alarms the objects set from it then lie
 * far ahead of the real clock, so none fires on its own while the test drives them.
 */
export function freezeClock(aheadMs = 0): number {
  const now = Date.now() + aheadMs;
  vi.useFakeTimers({ toFake: ["Date"], now });
  return now;
}
