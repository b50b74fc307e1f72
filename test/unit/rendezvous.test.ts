import { describe, expect, it } from "vitest";
import { Rendezvous } from "../support/rendezvous.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Rendezvous", () => {
  it("runs the action once, when the last party arrives, and gives every party its outcome", async () => {
    let runs = 0;
    const meeting = new Rendezvous(3, 10_000, async () => {
      runs += 1;
      return "done";
    });
    const first = meeting.arrive();
    const second = meeting.arrive();
    await sleep(20);
    expect(runs).toBe(0);
    const third = meeting.arrive();
    expect(await Promise.all([first, second, third])).toEqual(["done", "done", "done"]);
    expect(runs).toBe(1);
    expect(meeting.arrived).toBe(3);
    // A party that comes after it ran gets the same outcome, and nothing runs again.
    expect(await meeting.arrive()).toBe("done");
    expect(runs).toBe(1);
  });

  it("does not wait for a party that withdrew", async () => {
    const meeting = new Rendezvous(2, 10_000, async () => "met");
    const first = meeting.arrive();
    meeting.withdraw();
    expect(await first).toBe("met");
  });

  it("runs at the deadline with whoever arrived when a party never comes", async () => {
    const started = Date.now();
    const meeting = new Rendezvous(2, 100, async () => Date.now() - started);
    const waited = await meeting.arrive();
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(meeting.arrived).toBe(1);
  });

  it("hands a failed action's error to every party", async () => {
    const meeting = new Rendezvous(2, 10_000, async () => {
      throw new Error("the host would not restart");
    });
    const results = await Promise.allSettled([meeting.arrive(), meeting.arrive()]);
    expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "fulfilled"))).toEqual([
      "Error: the host would not restart",
      "Error: the host would not restart",
    ]);
  });
});
