import { describe, expect, it } from "vitest";
import { formatFindings } from "../../host-agent/src/cli/doctor.js";
import { checkNodeVersion } from "../../host-agent/src/cli/doctor-checks/node-version.js";

const day = (iso: string) => new Date(`${iso}T12:00:00Z`);

describe("doctor's Node check", () => {
  it("passes a supported Node without a word more", () => {
    expect(checkNodeVersion("22.23.3", day("2026-11-28"))).toEqual({
      check: "node",
      ok: true,
      detail: "Node 22.23.3",
    });
    // A release line newer than the table knows is not called old.
    expect(checkNodeVersion("30.1.0", day("2026-11-28"))).toMatchObject({ ok: true });
    expect(checkNodeVersion("30.1.0", day("2026-11-28")).warning).toBeUndefined();
  });

  it("warns, and still passes, on a Node past its end of life (Node 20 after 2026-04-30)", () => {
    const before = checkNodeVersion("20.20.2", day("2026-04-30"));
    expect(before.warning).toBeUndefined();
    const after = checkNodeVersion("20.20.2", day("2026-05-01"));
    expect(after).toMatchObject({ ok: true, warning: true });
    expect(after.detail).toContain("end of life on 2026-04-30");
    expect(after.fix).toContain("Node 22 or 24");
    expect(formatFindings([after])).toBe(
      [
        `! node: ${after.detail}`,
        "    install Node 22 or 24 (LTS); the host-agent runs on it unchanged",
      ].join("\n"),
    );
  });

  it("fails a Node older than the host-agent needs, and a version it cannot read", () => {
    expect(checkNodeVersion("20.10.0", day("2026-01-01"))).toMatchObject({
      ok: false,
      detail: "Node 20.10.0 is older than the host-agent needs (20.11 or later)",
    });
    expect(checkNodeVersion("18.20.0", day("2024-01-01")).ok).toBe(false);
    expect(checkNodeVersion("v-next", day("2026-01-01"))).toMatchObject({ ok: false });
  });
});
