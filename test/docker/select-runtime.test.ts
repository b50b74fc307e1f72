/** selectRuntime's choices when no engine answers (the docker-runtime tests cover a live engine). */
import { describe, expect, it } from "vitest";
import { RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { selectRuntime } from "../../host-agent/src/runtime/select-runtime.js";
import { createLogger } from "../../lib/log.js";

const base = {
  hostId: "select-test",
  logger: createLogger({ name: "select-runtime-test", level: "silent" }),
  dockerImage: "oubliette/droid:dev",
  runnerCommand: [process.execPath, "-e", ""],
  processAgentCommand: [process.execPath, "-e", ""],
  dockerSocket: "/tmp/oub-select-test/no-such-docker.sock",
};

describe("selectRuntime", () => {
  it("returns the process runtime when asked for it", async () => {
    expect((await selectRuntime({ ...base, prefer: "process" })).kind).toBe("process");
  });

  it("falls back to the process runtime on auto when no engine answers", async () => {
    expect((await selectRuntime({ ...base, prefer: "auto" })).kind).toBe("process");
  });

  it("fails clearly when docker is required but no engine answers", async () => {
    const failure = await selectRuntime({ ...base, prefer: "docker" }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RuntimeError);
    expect(failure).toMatchObject({ code: "docker_unavailable" });
    expect(String(failure)).toContain(base.dockerSocket);
  });
});
