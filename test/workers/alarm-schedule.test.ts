/**
 * One alarm for several parts of an object (worker/src/objects/alarm-schedule.ts): it is set to
 * the earliest moment any part is due; a part that adds one due moment (`dueBy`) leaves an
 * earlier alarm standing without asking the others; anything due sooner moves it. Run on a real
 * Durable Object's alarm.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createLog } from "../../worker/src/log.js";
import { AlarmSchedule } from "../../worker/src/objects/alarm-schedule.js";

/** A fresh object (a session object that holds no session) and its storage. */
function inObject<T>(work: (state: DurableObjectState) => T | Promise<T>): Promise<T> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`alarm-${crypto.randomUUID()}`));
  return runInDurableObject(stub, (_, state) => work(state));
}

/** A schedule over parts whose due moments the test sets, counting how often they are asked. */
async function scheduleOver(state: DurableObjectState, parts: (number | null)[]) {
  let asked = 0;
  const alarm = new AlarmSchedule(
    state,
    () => {
      asked += 1;
      return parts;
    },
    () => createLog({ component: "test" }),
  );
  // The constructor reads the stored alarm under blockConcurrencyWhile; let it finish.
  await state.storage.getAlarm();
  return { alarm, asked: () => asked };
}

describe("the alarm schedule", () => {
  it("sets the alarm to the earliest moment a part is due", async () => {
    await inObject(async (state) => {
      const now = Date.now();
      const { alarm } = await scheduleOver(state, [now + 50_000, null, now + 20_000]);
      alarm.schedule();
      expect(await state.storage.getAlarm()).toBe(now + 20_000);
    });
  });

  it("leaves an earlier alarm standing for a later due moment, without asking the parts", async () => {
    await inObject(async (state) => {
      const now = Date.now();
      const parts: (number | null)[] = [now + 20_000];
      const { alarm, asked } = await scheduleOver(state, parts);
      alarm.schedule();
      expect(asked()).toBe(1);
      parts.push(now + 60_000);
      alarm.schedule(now + 60_000);
      expect(asked()).toBe(1);
      expect(await state.storage.getAlarm()).toBe(now + 20_000);
    });
  });

  it("moves the alarm for a due moment before it", async () => {
    await inObject(async (state) => {
      const now = Date.now();
      const parts: (number | null)[] = [now + 20_000];
      const { alarm, asked } = await scheduleOver(state, parts);
      alarm.schedule();
      parts.push(now + 5_000);
      alarm.schedule(now + 5_000);
      expect(asked()).toBe(2);
      expect(await state.storage.getAlarm()).toBe(now + 5_000);
    });
  });

  it("asks every part again once the alarm has fired", async () => {
    await inObject(async (state) => {
      const now = Date.now();
      const parts: (number | null)[] = [now + 20_000];
      const { alarm, asked } = await scheduleOver(state, parts);
      alarm.schedule();
      alarm.fired();
      parts[0] = now + 30_000;
      alarm.schedule(now + 90_000);
      expect(asked()).toBe(2);
      expect(await state.storage.getAlarm()).toBe(now + 30_000);
    });
  });
});
