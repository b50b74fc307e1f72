import { describe, expect, it } from "vitest";
import { ReconnectBackoff } from "../../lib/backoff.js";

/** `random` returning just under 1 shows each attempt's ceiling. */
const ceiling = () => 0.999_999;

describe("ReconnectBackoff", () => {
  it("doubles the ceiling from the initial delay up to the cap", () => {
    const b = new ReconnectBackoff({ initialDelayMs: 100, maxDelayMs: 1000, random: ceiling });
    const delays = Array.from({ length: 6 }, () => b.next());
    expect(delays).toEqual([99, 199, 399, 799, 999, 999]);
    expect(b.attempt).toBe(6);
  });

  it("applies full jitter: the delay is random * ceiling", () => {
    const b = new ReconnectBackoff({ initialDelayMs: 100, maxDelayMs: 1000, random: () => 0 });
    expect([b.next(), b.next()]).toEqual([0, 0]);
    const half = new ReconnectBackoff({ initialDelayMs: 100, maxDelayMs: 1000, random: () => 0.5 });
    expect([half.next(), half.next(), half.next()]).toEqual([50, 100, 200]);
  });

  it("resets only after a connection that stayed up for the stable period", () => {
    const b = new ReconnectBackoff({
      initialDelayMs: 100,
      maxDelayMs: 10_000,
      stablePeriodMs: 5000,
      random: ceiling,
    });
    b.next();
    b.next();
    b.connectionEnded(4999);
    expect(b.next()).toBe(399);
    b.connectionEnded(5000);
    expect(b.attempt).toBe(0);
    expect(b.next()).toBe(99);
  });

  it("uses defaults of 250 ms initial and 30 s cap", () => {
    const b = new ReconnectBackoff({ random: ceiling });
    expect(b.next()).toBe(249);
    for (let i = 0; i < 20; i++) b.next();
    expect(b.next()).toBe(29_999);
  });
});
