/**
 * Stored records are read through their format: the version envelope opened, older data migrated,
 * every read parsed by the schema — a wrong shape or a newer version is an internal error naming
 * the kind, never a cast.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AppError } from "../../worker/src/errors.js";
import { JOB_RECORD } from "../../worker/src/jobs/job-record.js";
import { decodeRecord, encodeRecord, type RecordFormat } from "../../worker/src/objects/stored-record.js";
import { DEFAULT_LIMITS, storedConfig } from "../../worker/src/projects/project-config.js";
import { RUN_ENTRY, SCHEDULE_RECORD } from "../../worker/src/schedules/schedule-formats.js";
import { SESSION_RECORD } from "../../worker/src/session/session-record-format.js";

const Thing = z.object({ name: z.string(), size: z.number() });
const THING: RecordFormat<typeof Thing> = {
  kind: "thing",
  version: 2,
  schema: Thing,
  // Version 1 called it `label`; version 0 (bare) had no size.
  migrate: (data, from) => {
    const old = data as Record<string, unknown>;
    if (from === 0) return { name: old.name, size: 0 };
    return { name: old.label, size: old.size };
  },
};

describe("decodeRecord", () => {
  it("reads back what encodeRecord wrote", () => {
    const text = encodeRecord(THING, { name: "a", size: 3 });
    expect(JSON.parse(text)).toEqual({ v: 2, data: { name: "a", size: 3 } });
    expect(decodeRecord(THING, text)).toEqual({ name: "a", size: 3 });
  });

  it("migrates a bare record (version 0) and an older version", () => {
    expect(decodeRecord(THING, JSON.stringify({ name: "bare" }))).toEqual({ name: "bare", size: 0 });
    expect(decodeRecord(THING, JSON.stringify({ v: 1, data: { label: "old", size: 5 } }))).toEqual({
      name: "old",
      size: 5,
    });
  });

  it("refuses a record newer than the code, and one that does not parse, naming the kind", () => {
    const newer = () => decodeRecord(THING, JSON.stringify({ v: 3, data: { name: "x", size: 1 } }));
    expect(newer).toThrow(AppError);
    expect(newer).toThrow(/thing record is version 3/);
    const wrong = () => decodeRecord(THING, JSON.stringify({ v: 2, data: { name: 1, size: 1 } }));
    expect(wrong).toThrow(/stored thing record \(version 2\) does not parse at 'name'/);
  });

  it("refuses stored text that is not JSON with the same internal error", () => {
    const torn = () => decodeRecord(THING, '{"v":2,"data":{"na');
    expect(torn).toThrow(AppError);
    expect(torn).toThrow(/stored thing record is not JSON/);
  });

  it("reads a job record written before records had a version", () => {
    const bare = {
      jobId: "job_000000000000000000000001",
      tool: "container",
      action: "exec",
      label: "container.exec",
      timing: "async_medium",
      target: "project",
      projectId: "prj_1",
      mcp: null,
      viaSession: null,
      tokenId: "admin",
      status: "complete",
      createdAt: 1,
      startedAt: 2,
      endedAt: 3,
      expiresAt: 4,
      result: { exit_code: 0 },
      error: null,
      progress: null,
      cancel: null,
      sessionId: null,
      pending: null,
    };
    expect(decodeRecord(JOB_RECORD, JSON.stringify(bare))).toEqual(bare);
    expect(() => decodeRecord(JOB_RECORD, JSON.stringify({ ...bare, status: "exploded" }))).toThrow(
      /job record/,
    );
  });

  it("reads a session record of before workspaces and lifetimes with the defaults it meant", () => {
    const bare = {
      sessionId: "ses_1",
      projectId: "prj_1",
      ownerTokenId: "admin",
      callerId: "ant",
      callerTools: [{ name: "send_response" }],
      callerTimeoutMs: 300_000,
      status: "running",
      hostId: "h1",
      runtime: "docker",
      image: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      endedAt: null,
      lastMessageSeq: 2,
      storedHostEventSeq: 7,
    };
    expect(decodeRecord(SESSION_RECORD, JSON.stringify(bare))).toEqual({
      ...bare,
      workspaceId: "default",
      callerPresence: "stream",
      idleTimeoutMs: 0,
      maxLifetimeMs: 0,
      lastActivityAt: null,
      completedTurnSeq: 0,
      plainDroppedAt: null,
    });
    const current = decodeRecord(SESSION_RECORD, JSON.stringify(bare));
    const text = encodeRecord(SESSION_RECORD, current);
    expect(JSON.parse(text)).toMatchObject({ v: 1 });
    expect(decodeRecord(SESSION_RECORD, text)).toEqual(current);
    expect(() => decodeRecord(SESSION_RECORD, JSON.stringify({ ...bare, status: "asleep" }))).toThrow(
      /stored session record \(version 0\) does not parse at 'status'/,
    );
  });

  it("round-trips a schedule record and a run of its history, and names them when they do not parse", () => {
    const record = {
      name: "nightly",
      cronExpr: "0 3 * * *",
      timezone: "UTC",
      prompt: "tidy up",
      targets: [{ project_id: "prj_1", workspace_id: null }],
      overlap: "skip" as const,
      sessionBehavior: "new" as const,
      enabled: true,
      scheduleId: "sch_1",
      creator: { tokenId: "admin", issued: false },
      disabledReason: null,
      createdAt: 1,
      updatedAt: 2,
      nextRunAt: 3,
      deletedAt: null,
    };
    expect(decodeRecord(SCHEDULE_RECORD, JSON.stringify(record))).toEqual(record);
    expect(decodeRecord(SCHEDULE_RECORD, encodeRecord(SCHEDULE_RECORD, record))).toEqual(record);
    expect(() => decodeRecord(SCHEDULE_RECORD, JSON.stringify({ ...record, overlap: "maybe" }))).toThrow(
      /stored schedule record/,
    );
    const run = {
      run_id: "run_1",
      at: "2026-01-01T03:00:00.000Z",
      scheduled_for: null,
      trigger: "manual" as const,
      outcome: "started" as const,
      session_ids: ["ses_1"],
      reason: null,
      targets: [
        {
          project_id: "prj_1",
          workspace_id: null,
          outcome: "started" as const,
          session_id: "ses_1",
          resumed: false,
          reason: null,
          started_at: null,
        },
      ],
    };
    expect(decodeRecord(RUN_ENTRY, encodeRecord(RUN_ENTRY, run))).toEqual(run);
    expect(() => decodeRecord(RUN_ENTRY, JSON.stringify({ ...run, targets: "all" }))).toThrow(
      /stored schedule run record/,
    );
  });

  it("reads a project config stored before the limits and an agent were renamed", () => {
    const old = {
      name: "old-project",
      description: "",
      default_agent: "claude-code",
      default_model: null,
      env: {},
      limits: { ...DEFAULT_LIMITS, idle_timeout_minutes: 30, max_lifetime_hours: 24, max_recursion_depth: 2 },
      workspace_isolation: false,
      protected_paths: [],
      init_git: true,
      remote_url: null,
    };
    const config = storedConfig(JSON.stringify(old));
    expect(config.default_agent).toBe("claude");
    expect(config.limits).toEqual({ ...DEFAULT_LIMITS, max_recursion_depth: 2 });
    // One stored before a limit existed gets its default.
    const { disk_mb: _, ...older } = DEFAULT_LIMITS;
    expect(storedConfig(JSON.stringify({ ...old, limits: older })).limits).toEqual(DEFAULT_LIMITS);
    expect(() => storedConfig(JSON.stringify({ ...old, name: 7 }))).toThrow(
      /stored project config record \(version 0\) does not parse at 'name'/,
    );
  });
});
