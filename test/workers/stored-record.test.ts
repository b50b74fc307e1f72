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
});
