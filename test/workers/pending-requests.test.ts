/**
 * The one pending-request mechanism (worker/src/pending/): a request is opened with a deadline,
 * persisted, decided exactly once (answered, cancelled, expired, failed with the rest), its
 * outcome delivered, remembered for a while, then pruned; its rows survive a restart of the
 * object and are parsed by the kind's schema when read. Run inside a real Durable Object's SQLite.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AppError } from "../../worker/src/errors.js";
import { type PendingHooks, PendingRequests } from "../../worker/src/pending/pending-requests.js";
import { type PendingRow, PendingStore } from "../../worker/src/pending/pending-store.js";

const Outcome = z.object({ ok: z.boolean(), note: z.string() });
type Outcome = z.infer<typeof Outcome>;
const RETENTION_MS = 60_000;

/** A fresh object's SQLite (a session object that holds no session). */
function inObject<T>(work: (sql: SqlStorage) => T | Promise<T>): Promise<T> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`pending-${crypto.randomUUID()}`));
  return runInDurableObject(stub, (_, state) => work(state.storage.sql));
}

/** A mechanism of kind `kind` whose hooks record what they were told. */
function mechanism(sql: SqlStorage, kind = "test") {
  const delivered: [string, Outcome][] = [];
  const decided: [string, Outcome][] = [];
  const dueBy: number[] = [];
  const hooks: PendingHooks<Outcome> = {
    deliver: (row, outcome) => delivered.push([row.id, outcome]),
    decided: (row, outcome) => decided.push([row.id, outcome]),
    scheduleAlarm: (at) => {
      dueBy.push(at);
    },
  };
  const pending = new PendingRequests(new PendingStore(sql, kind, Outcome), hooks, RETENTION_MS);
  return { pending, delivered, decided, alarms: () => dueBy.length, dueBy };
}

const ask = (id: string, deadline: number) => ({ id, subject: "approve", deadline, payload: { n: 1 } });

describe("pending requests", () => {
  it("opens a request, delivers its answer once, and refuses to decide it again", async () => {
    await inObject((sql) => {
      const m = mechanism(sql);
      const deadline = Date.now() + 10_000;
      m.pending.open(ask("r1", deadline));
      expect(m.alarms()).toBe(1);
      expect(m.pending.countWaiting()).toBe(1);
      expect(m.pending.nextDue()).toBe(deadline);
      const row = m.pending.find("r1") as PendingRow<Outcome>;
      expect(row).toMatchObject({ state: "waiting", subject: "approve", payload: { n: 1 }, outcome: null });
      expect(m.pending.settle(row, { ok: true, note: "yes" }, { deliver: true })).toBe(true);
      expect(m.pending.settle(row, { ok: false, note: "again" }, { deliver: true })).toBe(false);
      const stale = { ...row, state: "waiting" as const };
      expect(m.pending.settle(stale, { ok: false, note: "raced" }, { deliver: false })).toBe(false);
      expect(m.decided).toEqual([["r1", { ok: true, note: "yes" }]]);
      expect(m.pending.find("r1")).toMatchObject({ state: "done", outcome: { ok: true, note: "yes" } });
      expect(m.pending.countWaiting()).toBe(0);
    });
  });

  it("tells the owner's alarm when each new thing is due: a deadline, then pruning", async () => {
    await inObject((sql) => {
      const m = mechanism(sql);
      const deadline = Date.now() + 10_000;
      m.pending.open(ask("r1", deadline));
      expect(m.dueBy).toEqual([deadline]);
      const before = Date.now();
      m.pending.settle(
        m.pending.find("r1") as PendingRow<Outcome>,
        { ok: true, note: "y" },
        { deliver: true },
      );
      expect(m.dueBy).toHaveLength(2);
      expect(m.dueBy[1]).toBeGreaterThanOrEqual(before + RETENTION_MS);
      expect(m.dueBy[1]).toBe(m.pending.nextDue());
    });
  });

  it("does not deliver a cancelled request's outcome, but remembers it", async () => {
    await inObject((sql) => {
      const m = mechanism(sql);
      m.pending.open(ask("r1", Date.now() + 10_000));
      const row = m.pending.find("r1") as PendingRow<Outcome>;
      expect(m.pending.settle(row, { ok: false, note: "cancelled" }, { deliver: false })).toBe(true);
      expect(m.delivered).toEqual([]);
      expect(m.decided).toEqual([["r1", { ok: false, note: "cancelled" }]]);
    });
  });

  it("expires requests past their deadline with the kind's outcome, soonest first", async () => {
    await inObject((sql) => {
      const m = mechanism(sql);
      const now = Date.now();
      m.pending.open(ask("late", now + 60_000));
      m.pending.open(ask("b", now - 10));
      m.pending.open(ask("a", now - 20));
      m.pending.expire(now, (row) => ({ ok: false, note: `timeout ${row.id}` }));
      expect(m.delivered).toEqual([
        ["a", { ok: false, note: "timeout a" }],
        ["b", { ok: false, note: "timeout b" }],
      ]);
      expect(m.pending.waiting().map((r) => r.id)).toEqual(["late"]);
    });
  });

  it("fails every waiting request at once, and keeps kinds apart", async () => {
    await inObject((sql) => {
      const calls = mechanism(sql, "calls");
      const approvals = mechanism(sql, "approvals");
      calls.pending.open(ask("x", Date.now() + 10_000));
      approvals.pending.open(ask("x", Date.now() + 10_000));
      calls.pending.failAll({ ok: false, note: "gone" });
      expect(calls.delivered).toEqual([["x", { ok: false, note: "gone" }]]);
      expect(approvals.pending.find("x")).toMatchObject({ state: "waiting" });
      expect(approvals.pending.countWaiting()).toBe(1);
    });
  });

  it("remembers a request decided on arrival, and prunes decided ones after retention", async () => {
    await inObject((sql) => {
      const m = mechanism(sql);
      const now = Date.now();
      m.pending.decidedOnArrival({ id: "refused", subject: "approve" }, { ok: false, note: "no" }, now);
      expect(m.pending.find("refused")).toMatchObject({ state: "done", outcome: { ok: false, note: "no" } });
      expect(m.pending.nextDue()).toBe(now + RETENTION_MS);
      m.pending.prune(now + RETENTION_MS - 1);
      expect(m.pending.find("refused")).not.toBeNull();
      m.pending.prune(now + RETENTION_MS + 1);
      expect(m.pending.find("refused")).toBeNull();
      expect(m.pending.nextDue()).toBeNull();
    });
  });

  it("finds its requests again after the object restarts (a new mechanism on the same storage)", async () => {
    await inObject((sql) => {
      const deadline = Date.now() + 10_000;
      mechanism(sql).pending.open(ask("r1", deadline));
      const again = mechanism(sql);
      expect(again.pending.nextDue()).toBe(deadline);
      const row = again.pending.find("r1") as PendingRow<Outcome>;
      expect(again.pending.settle(row, { ok: true, note: "later" }, { deliver: true })).toBe(true);
      expect(again.delivered).toEqual([["r1", { ok: true, note: "later" }]]);
    });
  });

  it("moves rows of an older table into its kind once", async () => {
    await inObject((sql) => {
      sql.exec(
        "CREATE TABLE calls (call_id TEXT PRIMARY KEY, tool TEXT NOT NULL, deadline INTEGER NOT NULL, state TEXT NOT NULL, outcome TEXT, done_at INTEGER)",
      );
      sql.exec("INSERT INTO calls VALUES ('old', 'lookup', 123, 'waiting', NULL, NULL)");
      const store = new PendingStore(sql, "legacy", Outcome);
      store.adopt("calls", { id: "call_id", subject: "tool", payload: "arguments" });
      expect(store.find("old")).toMatchObject({
        subject: "lookup",
        deadline: 123,
        state: "waiting",
        payload: {},
      });
      const tables = sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'calls'");
      expect(tables.toArray()).toEqual([]);
      // Adopting again (the next start) finds nothing to move.
      store.adopt("calls", { id: "call_id", subject: "tool", payload: "arguments" });
      expect(store.countWaiting()).toBe(1);
    });
  });

  it("parses a stored payload only when it is read, and refuses one that does not parse", async () => {
    await inObject((sql) => {
      const m = mechanism(sql, "approval");
      m.pending.open(ask("r1", Date.now() + 10_000));
      sql.exec("UPDATE pending SET payload = '[1, 2]' WHERE id = 'r1'");
      // Deciding the request never needs its payload.
      const row = m.pending.find("r1") as PendingRow<Outcome>;
      expect(row).toMatchObject({ id: "r1", state: "waiting", subject: "approve" });
      expect(() => row.payload).toThrow(/approval request's payload/);
      expect(m.pending.settle(row, { ok: true, note: "y" }, { deliver: true })).toBe(true);
    });
  });

  it("refuses a stored outcome that does not parse with an internal error naming the kind", async () => {
    await inObject((sql) => {
      const m = mechanism(sql, "approval");
      m.pending.open(ask("r1", Date.now() + 10_000));
      sql.exec("UPDATE pending SET state = 'done', outcome = '{\"ok\":\"perhaps\"}' WHERE id = 'r1'");
      let error: unknown;
      try {
        m.pending.find("r1");
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: "internal" });
      expect(String((error as Error).message)).toMatch(/approval request's outcome/);
    });
  });
});
