/**
 * A container exec the Worker cancels is killed on the host: the registry's
 * `notifications/cancelled` reaches the host channel's handler as an aborted signal, and the
 * process runtime's exec kills the command (a real child process) at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { processExec } from "../../host-agent/src/runtime/process-exec.js";
import { type HostTarget, serveHostRequests } from "../../host-agent/src/tunnel/host-control.js";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import type { ContainerExecResult } from "../../protocol/tunnel-projects.js";

const logger = createLogger({ name: "exec-cancel-test", level: "silent" });
const workspacesDir = mkdtempSync(join(tmpdir(), "oub-exec-cancel-"));
afterAll(() => rmSync(workspacesDir, { recursive: true, force: true }));

/** The registry's end and the host's end of a host channel, linked in memory. */
function channel() {
  let registry!: RpcPeer;
  let host!: RpcPeer;
  const link = (to: () => RpcPeer) => (text: string) => {
    setImmediate(() => to().receive(text));
    return true;
  };
  registry = new RpcPeer({ send: link(() => host), maxMessageBytes: 1 << 20, logger });
  host = new RpcPeer({ send: link(() => registry), maxMessageBytes: 1 << 20, logger });
  return { registry, host };
}

const PARAMS = {
  project_id: "prj_000000000000000000000001",
  command: [process.execPath, "-e", "setInterval(() => {}, 1000)"],
  timeout_ms: 60_000,
  output_limit_bytes: 1024,
};

describe("a cancelled container exec", () => {
  it("is killed on the host when the registry cancels its request", async () => {
    const { registry, host } = channel();
    let finished!: (result: ContainerExecResult) => void;
    const ran = new Promise<ContainerExecResult>((resolve) => {
      finished = resolve;
    });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    // Only exec is asked of this host.
    const target = {
      exec: async (params: typeof PARAMS, signal?: AbortSignal) => {
        started();
        const result = await processExec(params, workspacesDir, { PATH: process.env.PATH ?? "" }, signal);
        finished(result);
        return result;
      },
    } as unknown as HostTarget;
    serveHostRequests(host, target, logger);
    const cancel = new AbortController();
    const asked = registry.request(TunnelMethod.containerExec, PARAMS, { signal: cancel.signal });
    await running;
    const before = Date.now();
    cancel.abort(new Error("the job was cancelled"));
    await expect(asked).rejects.toBeDefined();
    const result = await ran;
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(result).toMatchObject({ exit_code: null, timed_out: false });
  });
});
