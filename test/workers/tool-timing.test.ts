/** Every action's timing class (tools/define.ts), as tools/list shows it. */
import { describe, expect, it } from "vitest";
import { callerTools } from "../../worker/src/tools/catalog.js";

const listing = (name: string) => callerTools.list().find((t) => t.name === name);

describe("timing classes", () => {
  it("tools/list gives each action's class in _meta", () => {
    expect(listing("container")?._meta["oubliette/timing"]).toEqual({
      start: "async_medium",
      stop: "async_short",
      exec: "async_medium",
      logs: "sync",
    });
    expect(listing("image_rebuild")?._meta["oubliette/timing"]).toEqual({ image_rebuild: "async_medium" });
  });

  it("and in the description, for tools that have actions other than sync", () => {
    expect(listing("container")?.description).toContain(
      "start, exec: async_medium: a job, waited for up to 120 s, then answered with its job_id",
    );
    expect(listing("container")?.description).toContain("stop: async_short");
    expect(listing("container")?.description).toContain("the other actions sync.");
    expect(listing("image_rebuild")?.description).toContain("Timing: async_medium");
    expect(listing("token")?.description).not.toContain("Timing");
  });
});
