import { vi } from "vitest";
import { until } from "./poll.js";

/**
 * Tests and Durable Objects share one isolate under the workers pool, so vitest's fake clock
 * drives the objects' `Date.now()` and `setTimeout` too. Restore with `vi.useRealTimers()`.
 */

/** Freezes `Date` (alarms and deadlines compute from it); returns "now". */
export function freezeClock(): number {
  const now = Date.now();
  vi.useFakeTimers({ toFake: ["Date"], now });
  return now;
}

/** Fakes `setTimeout`/`clearTimeout` and `Date`. */
export function fakeTimeouts(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.now() });
}

/** Waits until some code (e.g. a Durable Object) has armed a fake timeout, then advances `ms`. */
export async function advanceOnceArmed(ms: number): Promise<void> {
  await until(async () => vi.getTimerCount() > 0, "a timeout is armed");
  await vi.advanceTimersByTimeAsync(ms);
}
