import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import {
  alarmOf,
  completeTurn,
  createSchedule,
  deleteSchedules,
  errorOf,
  historyOf,
  okOf,
  scheduleStub,
  trigger,
} from "./support/schedules.js";

/** Alarms set from a clock a day ahead never fire on their own: the tests drive them. */
const DAY = 86_400_000;
const MINUTE = 60_000;

let admin = "";
let host: FakeHost;
let projectId = "";

beforeEach(async () => {
  admin = await initialize();
  host = await FakeHost.connect(uniqueHostId("schedules"), { maxSessions: 50 });
  projectId = await createProject();
});

afterEach(async () => {
  vi.useRealTimers();
  await deleteSchedules(admin);
  await disconnectAll();
});

const call = (args: Record<string, unknown>) => callTool(admin, "schedule", args);
const target = () => [{ project_id: projectId }];
/** The sessions the host was asked to start in this test's project. */
const startedHere = () => host.starts().filter((s) => s.project_id === projectId);
const getInfo = async (id: string) => okOf(await call({ action: "get", schedule_id: id }));

/** Issues a caller token with `scope` (as the admin); returns the token and its id. */
async function issueToken(scope: string): Promise<{ token: string; id: string }> {
  const created = okOf(await callTool(admin, "token", { action: "create", name: `sched ${scope}`, scope }));
  return { token: z.string().parse(created.token), id: z.string().parse(created.token_id) };
}

describe("a schedule's alarm", () => {
  it("fires a one-minute cron at its time, starts a session on the host and records the run", async () => {
    const t0 = freezeClock(DAY);
    const { id, info } = await createSchedule(admin, { cron_expr: "* * * * *", targets: target() });
    const due = Date.parse(String(info.next_run_at));
    expect(due).toBe(Math.floor(t0 / MINUTE) * MINUTE + MINUTE);
    expect(await alarmOf(id)).toBe(due);

    // Woken early (before its time), it does not run.
    await runDurableObjectAlarm(scheduleStub(id));
    expect(await historyOf(admin, id)).toEqual([]);

    vi.setSystemTime(due + 1_000);
    expect(await runDurableObjectAlarm(scheduleStub(id))).toBe(true);
    const [run] = await historyOf(admin, id);
    expect(run).toMatchObject({
      trigger: "cron",
      outcome: "started",
      scheduled_for: new Date(due).toISOString(),
    });
    const sessionId = run?.session_ids[0] ?? "";
    expect(sessionId).toMatch(/^ses_/);
    expect(startedHere().map((s) => s.session_id)).toContain(sessionId);
    const sessions = okOf(await callTool(admin, "session", { action: "list", project_id: projectId }));
    expect(sessions.sessions).toEqual([
      expect.objectContaining({ session_id: sessionId, source: `schedule:${id}`, owner_token_id: "admin" }),
    ]);
    expect(await getInfo(id)).toMatchObject({ next_run_at: new Date(due + MINUTE).toISOString() });
    expect(await alarmOf(id)).toBe(due + MINUTE);
  });

  it("does not fire while disabled; update moves the next fire time; delete stops the alarm", async () => {
    freezeClock(DAY);
    const off = await createSchedule(admin, { cron_expr: "* * * * *", targets: target(), enabled: false });
    expect(off.info).toMatchObject({ enabled: false, next_run_at: null });
    expect(await alarmOf(off.id)).toBeNull();
    expect(await runDurableObjectAlarm(scheduleStub(off.id))).toBe(false);

    const { id, info } = await createSchedule(admin, { cron_expr: "0 * * * *", targets: target() });
    const hourly = Date.parse(String(info.next_run_at));
    expect(new Date(hourly).getUTCMinutes()).toBe(0);
    const moved = okOf(await call({ action: "update", schedule_id: id, cron_expr: "30 * * * *" }));
    const halfPast = Date.parse(String(moved.next_run_at));
    expect(new Date(halfPast).getUTCMinutes()).toBe(30);
    expect(halfPast).not.toBe(hourly);
    expect(await alarmOf(id)).toBe(halfPast);

    // A timezone moves it too: 09:00 in Kolkata (UTC+05:30) is 03:30 UTC.
    const local = okOf(
      await call({ action: "update", schedule_id: id, cron_expr: "0 9 * * *", timezone: "Asia/Kolkata" }),
    );
    const nine = new Date(String(local.next_run_at));
    expect([nine.getUTCHours(), nine.getUTCMinutes()]).toEqual([3, 30]);

    okOf(await call({ action: "update", schedule_id: id, enabled: false }));
    expect(await alarmOf(id)).toBeNull();
    vi.setSystemTime(Date.parse(String(local.next_run_at)) + 1_000);
    await runDurableObjectAlarm(scheduleStub(id));
    expect(await historyOf(admin, id)).toEqual([]);

    okOf(await call({ action: "update", schedule_id: id, enabled: true }));
    expect(await alarmOf(id)).not.toBeNull();
    expect(okOf(await call({ action: "delete", schedule_id: id }))).toMatchObject({ deleted: true });
    expect(await alarmOf(id)).toBeNull();
    expect(await runDurableObjectAlarm(scheduleStub(id))).toBe(false);
    expect(errorOf(await call({ action: "get", schedule_id: id }))).toMatchObject({
      code: "not_found",
      message: expect.stringContaining("was deleted"),
    });
    const listed = okOf(await call({ action: "list", project_id: projectId }));
    expect(listed.schedules).toEqual([expect.objectContaining({ schedule_id: off.id })]);
  });
});

describe("trigger and overlap", () => {
  it("trigger runs at once, even while disabled", async () => {
    const { id } = await createSchedule(admin, { cron_expr: "0 0 1 1 *", targets: target(), enabled: false });
    const run = await trigger(admin, id);
    expect(run).toMatchObject({ trigger: "manual", outcome: "started", scheduled_for: null });
    expect(startedHere().map((s) => s.session_id)).toEqual(run.session_ids);
    expect(await getInfo(id)).toMatchObject({ last_run: { run_id: run.run_id, outcome: "started" } });
    // The trigger is audited as the caller's, the run as the creator's.
    const entriesOf = async () =>
      z
        .array(z.object({ action: z.string(), target: z.string().nullable(), outcome: z.string() }))
        .parse(okOf(await callTool(admin, "audit", { action_prefix: "schedule." })).entries)
        .filter((e) => e.target === id);
    await until(async () => (await entriesOf()).length >= 3, "the audit log has the schedule's entries");
    const entries = (await entriesOf()).map((e) => `${e.action} ${e.outcome}`);
    expect(entries.sort()).toEqual(["schedule.create ok", "schedule.run (manual) ok", "schedule.trigger ok"]);
  });

  it("skip: a run while the previous run's session is busy is skipped; after its turn, runs start", async () => {
    const { id } = await createSchedule(admin, {
      cron_expr: "0 0 1 1 *",
      targets: target(),
      overlap_behavior: "skip",
    });
    const first = await trigger(admin, id);
    const busy = first.session_ids[0] ?? "";
    const second = await trigger(admin, id);
    expect(second).toMatchObject({ outcome: "skipped", session_ids: [] });
    expect(second.reason).toContain(`session ${busy} of an earlier run is still busy`);
    await completeTurn(busy, host.hostId);
    const third = await trigger(admin, id);
    expect(third.outcome).toBe("started");
    expect(third.session_ids[0]).not.toBe(busy);
    expect((await historyOf(admin, id)).map((r) => r.outcome)).toEqual(["started", "skipped", "started"]);
  });

  it("queue: a run waits for the previous run's turn to complete, then starts; the queue is bounded", async () => {
    const { id } = await createSchedule(admin, {
      cron_expr: "0 0 1 1 *",
      targets: target(),
      overlap_behavior: "queue",
    });
    const first = await trigger(admin, id);
    const s1 = first.session_ids[0] ?? "";
    const second = await trigger(admin, id);
    expect(second).toMatchObject({ outcome: "queued", session_ids: [] });
    expect(second.reason).toContain(`waits for session ${s1}`);
    const third = await trigger(admin, id);
    expect(third).toMatchObject({ outcome: "queued" });
    expect(await getInfo(id)).toMatchObject({ queued_runs: 2 });
    for (let i = 0; i < 3; i++) expect((await trigger(admin, id)).outcome).toBe("queued");
    const full = await trigger(admin, id);
    expect(full).toMatchObject({ outcome: "skipped" });
    expect(full.reason).toContain("5 runs already wait");

    // The droid finishes the first turn: the session tells the schedule, the oldest queued run starts.
    await completeTurn(s1, host.hostId);
    const runOf = async (runId: string) => (await historyOf(admin, id)).find((r) => r.run_id === runId);
    await until(async () => (await runOf(second.run_id))?.outcome === "started", "the queued run started");
    const s2 = (await runOf(second.run_id))?.session_ids[0] ?? "";
    expect(s2).not.toBe(s1);
    expect(startedHere().map((s) => s.session_id)).toContain(s2);
    // The next one waits for that run's session now.
    expect((await runOf(third.run_id))?.outcome).toBe("queued");
    await completeTurn(s2, host.hostId);
    await until(
      async () => (await runOf(third.run_id))?.outcome === "started",
      "the next queued run started",
    );
    expect(await getInfo(id)).toMatchObject({ queued_runs: 3 });
  });

  it("parallel: a run starts a second session while the first is busy", async () => {
    const { id } = await createSchedule(admin, {
      cron_expr: "0 0 1 1 *",
      targets: target(),
      overlap_behavior: "parallel",
    });
    const first = await trigger(admin, id);
    const second = await trigger(admin, id);
    expect([first.outcome, second.outcome]).toEqual(["started", "started"]);
    expect(second.session_ids[0]).not.toBe(first.session_ids[0]);
    expect(startedHere()).toHaveLength(2);
  });

  it("session_behavior resume sends the prompt to the workspace's running session instead of spawning", async () => {
    const spawned = okOf(await callTool(admin, "session", { action: "spawn", project_id: projectId }));
    const running = z.string().parse(spawned.session_id);
    const { id } = await createSchedule(admin, {
      cron_expr: "0 0 1 1 *",
      targets: target(),
      session_behavior: "resume",
      overlap_behavior: "parallel",
      prompt: "what changed?",
    });
    const run = await trigger(admin, id);
    expect(run).toMatchObject({ outcome: "started", session_ids: [running] });
    expect(run.targets[0]?.resumed).toBe(true);
    expect(startedHere()).toHaveLength(1);
    const events = okOf(await callTool(admin, "session", { action: "events", session_id: running }));
    expect(events.events).toContainEqual(
      expect.objectContaining({ type: "message_sent", text: "what changed?" }),
    );
  });
});

describe("the creator's authority", () => {
  it("a revoked creator token fails the next run, and the schedule disables itself saying why", async () => {
    freezeClock(DAY);
    const writer = await issueToken(`project:${projectId}`);
    const mcp = await initialize(writer.token);
    const { id, info } = await createSchedule(
      mcp,
      { cron_expr: "* * * * *", targets: target() },
      writer.token,
    );
    expect(info).toMatchObject({ created_by: writer.id, enabled: true });
    okOf(await callTool(admin, "token", { action: "revoke", token_id: writer.id }));

    vi.setSystemTime(Date.parse(String(info.next_run_at)) + 1_000);
    await runDurableObjectAlarm(scheduleStub(id));
    const [run] = await historyOf(admin, id);
    expect(run).toMatchObject({ trigger: "cron", outcome: "failed", session_ids: [] });
    expect(run?.reason).toBe(`token ${writer.id} was revoked`);
    expect(await getInfo(id)).toMatchObject({
      enabled: false,
      next_run_at: null,
      disabled_reason: `token ${writer.id} was revoked`,
    });
    expect(await alarmOf(id)).toBeNull();
    expect(startedHere()).toEqual([]);
    // Turning it back on cannot help: it would run as the revoked token.
    expect(errorOf(await call({ action: "update", schedule_id: id, enabled: true }))).toMatchObject({
      code: "conflict",
      message: expect.stringContaining("create a new schedule"),
    });
  });

  it("a deleted target project fails the run and disables the schedule", async () => {
    const { id } = await createSchedule(admin, { cron_expr: "0 0 1 1 *", targets: target() });
    okOf(await callTool(admin, "project", { action: "delete", project_id: projectId }));
    const run = await trigger(admin, id);
    expect(run).toMatchObject({ outcome: "failed", reason: `project ${projectId} no longer exists` });
    expect(await getInfo(id)).toMatchObject({ enabled: false });
  });
});

describe("list", () => {
  it("pages through a project's schedules in creation order", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createSchedule(admin, { cron_expr: "0 0 1 1 *", targets: target() })).id);
    }
    const page = (cursor?: string) =>
      call({ action: "list", project_id: projectId, limit: 2, ...(cursor ? { cursor } : {}) }).then(okOf);
    const first = await page();
    const idsOf = (p: Record<string, unknown>) =>
      z
        .array(z.object({ schedule_id: z.string() }))
        .parse(p.schedules)
        .map((s) => s.schedule_id);
    expect(idsOf(first)).toEqual(ids.slice(0, 2));
    const second = await page(z.string().parse(first.next_cursor));
    expect(idsOf(second)).toEqual(ids.slice(2));
    expect(second.next_cursor).toBeNull();
    expect(errorOf(await call({ action: "list", cursor: "nonsense" })).code).toBe("invalid_arguments");
  });
});

describe("errors and access", () => {
  it("refuses an invalid cron or timezone, an unknown project or workspace, a target twice or with an unknown key", async () => {
    const bad = async (args: Record<string, unknown>) =>
      errorOf(
        await call({
          action: "create",
          name: "x",
          prompt: "p",
          cron_expr: "0 * * * *",
          targets: target(),
          ...args,
        }),
      );
    expect(await bad({ cron_expr: "61 * * * *" })).toMatchObject({
      code: "invalid_arguments",
      message: expect.stringContaining("is not a five-field cron expression"),
    });
    expect(await bad({ cron_expr: "* * * * * *" })).toMatchObject({ code: "invalid_arguments" });
    expect(await bad({ cron_expr: "0 0 30 2 *" })).toMatchObject({
      code: "invalid_arguments",
      message: expect.stringContaining("never fires"),
    });
    expect(await bad({ timezone: "Mars/Olympus" })).toMatchObject({
      code: "invalid_arguments",
      message: expect.stringContaining("not an IANA timezone"),
    });
    const unknown = "prj_ffffffffffffffffffffffff";
    expect(await bad({ targets: [{ project_id: unknown }] })).toMatchObject({
      code: "not_found",
      message: `no project ${unknown}`,
    });
    expect(await bad({ targets: [{ project_id: projectId, workspace_id: "nope" }] })).toMatchObject({
      code: "not_found",
      message: `no workspace nope in project ${projectId}`,
    });
    expect(await bad({ targets: [...target(), ...target()] })).toMatchObject({ code: "invalid_arguments" });
    expect(await bad({ targets: [] })).toMatchObject({ code: "invalid_arguments" });
    // A misspelt workspace_id is refused, not dropped (which would run in the default workspace).
    expect(await bad({ targets: [...target(), { project_id: projectId, workspace: "w" }] })).toEqual({
      code: "invalid_arguments",
      message: 'Invalid arguments for schedule: targets.1: Unrecognized key: "workspace"',
    });
    expect(errorOf(await call({ action: "get", schedule_id: "sch_ffffffffffffffffffffffff" }))).toEqual({
      code: "not_found",
      message: "no schedule sch_ffffffffffffffffffffffff",
    });
  });

  it("a read-only token may read but not write; list shows only what the token may see", async () => {
    const { id } = await createSchedule(admin, { cron_expr: "0 0 1 1 *", targets: target() });
    const reader = await issueToken(`project:${projectId}:ro`);
    const other = await issueToken(`project:${await createProject()}`);
    const asReader = await initialize(reader.token);
    const asOther = await initialize(other.token);

    const refused = errorOf(
      await callTool(
        asReader,
        "schedule",
        { action: "create", name: "x", prompt: "p", cron_expr: "0 * * * *", targets: target() },
        reader.token,
      ),
    );
    expect(refused).toMatchObject({
      code: "forbidden",
      message: expect.stringContaining("needs write access"),
    });
    for (const action of ["trigger", "delete"]) {
      const r = await callTool(asReader, "schedule", { action, schedule_id: id }, reader.token);
      expect(errorOf(r).code).toBe("forbidden");
    }
    expect(
      okOf(await callTool(asReader, "schedule", { action: "get", schedule_id: id }, reader.token)),
    ).toMatchObject({ schedule_id: id });
    const seen = okOf(await callTool(asReader, "schedule", { action: "list" }, reader.token));
    expect(seen.schedules).toEqual([expect.objectContaining({ schedule_id: id })]);

    // A token of another project neither sees it nor reaches it.
    expect(okOf(await callTool(asOther, "schedule", { action: "list" }, other.token)).schedules).toEqual([]);
    const get = await callTool(asOther, "schedule", { action: "get", schedule_id: id }, other.token);
    expect(errorOf(get).code).toBe("forbidden");
    const retarget = await callTool(
      asOther,
      "schedule",
      { action: "create", name: "x", prompt: "p", cron_expr: "0 * * * *", targets: target() },
      other.token,
    );
    expect(errorOf(retarget).code).toBe("forbidden");
  });
});
