import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitForDocker } from "../support/docker-context.js";

describe("waiting for the Docker preparation (the docker project's setup file)", () => {
  const dir = mkdtempSync(join(tmpdir(), "oub-docker-ready-"));
  const file = join(dir, "ready.json");
  afterEach(() => rmSync(file, { force: true }));

  it("returns the engine and images once the preparation wrote them", async () => {
    setTimeout(
      () =>
        writeFileSync(
          file,
          JSON.stringify({
            ok: true,
            dockerSocket: "/var/run/docker.sock",
            nodeBaseImage: "oubliette/node-base:22",
            droidImage: "oubliette/droid:dev",
            agentImages: { claude: "oubliette/agent-claude:dev", scripted: "oubliette/droid:dev" },
          }),
        ),
      300,
    );
    expect(await waitForDocker(file, 5_000)).toMatchObject({
      dockerSocket: "/var/run/docker.sock",
      agentImages: { claude: "oubliette/agent-claude:dev" },
    });
  });

  it("fails every Docker test with the preparation's own error", async () => {
    writeFileSync(file, JSON.stringify({ ok: false, error: "dockerd exited: no such device" }));
    await expect(waitForDocker(file, 5_000)).rejects.toThrow(
      /Docker could not be prepared for the tests, so none of them can run:\ndockerd exited: no such device/,
    );
  });

  it("gives up, saying so, when the preparation never finishes", async () => {
    await expect(waitForDocker(file, 300)).rejects.toThrow(/Docker was not ready within 0.3 s/);
  });
});
