import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lostItsPort } from "../../scripts/stack/wrangler-dev.js";

describe("a Worker server that lost its picked port", () => {
  const log = join(mkdtempSync(join(tmpdir(), "oub-wrangler-log-")), "worker.log");

  it("is told by workerd's own words in the output since its start, and only there", async () => {
    writeFileSync(log, "an earlier start: Address already in use; toString() = 127.0.0.1:40001\n");
    const offset = Buffer.byteLength(
      "an earlier start: Address already in use; toString() = 127.0.0.1:40001\n",
    );
    appendFileSync(log, "workerd/server/server.c++:4561: starting\n");
    expect(await lostItsPort(log, offset)).toBe(false);
    appendFileSync(
      log,
      "uncaught exception; source = Uncaught (in promise); stack = Error: listen EADDRINUSE\n",
    );
    expect(await lostItsPort(log, offset)).toBe(true);
  });

  it("is not, when there is no output at all", async () => {
    expect(await lostItsPort(join(tmpdir(), "no-such-oubliette-log"), 0)).toBe(false);
  });
});
