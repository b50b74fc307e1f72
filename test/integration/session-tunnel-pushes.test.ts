/**
 * The host-agent's session tunnel telling the session object of the agent's pushes: each goes out
 * as `git_pushed` whose request id is its push id, is re-sent under that id after every reconnect
 * until the object answers, and a push made while the tunnel is down goes out once it is back.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionTunnel } from "../../host-agent/src/tunnel/session-tunnel.js";
import { createLogger } from "../../lib/log.js";
import type { GitPush } from "../../protocol/tunnel-git.js";
import { FakeSessionObject, type Frame, until } from "../support/fake-session-object.js";

const logger = createLogger({
  name: "tunnel-pushes-it",
  level: process.env.TEST_LOG_LEVEL ?? "silent",
  fd: 2,
});
const PUSH: GitPush = {
  branch: "agent/one",
  commit: "0123456789abcdef0123456789abcdef01234567",
  outcome: "created",
  remote_url: "https://forge.example/acme/app.git",
};

let object: FakeSessionObject;
let tunnel: SessionTunnel;

beforeEach(async () => {
  object = new FakeSessionObject("ses_0000000000000000000000d1");
  tunnel = new SessionTunnel({
    workerUrl: await object.listen(),
    hostToken: "host-token",
    hostId: "host-1",
    sessionId: object.sessionId,
    logger,
    timing: { heartbeatMs: 60_000, maxReconnectDelayMs: 50 },
    onConfig: () => {},
    onDroidMessage: async () => {},
    onEventsStored: () => {},
    onGone: () => {},
    onInterrupt: () => {},
    onStoredUsage: () => {},
  });
  tunnel.start();
  await until(() => tunnel.connected, "the tunnel");
});

afterEach(async () => {
  tunnel.close();
  await object.close();
});

const pushes = () => object.requests("git_pushed");

describe("session tunnel: the agent's pushes", () => {
  it("sends a push under its push id, again after a reconnect, and no more once answered", async () => {
    tunnel.gitPushed(PUSH);
    await until(() => pushes().length === 1, "the git_pushed request");
    const first = pushes()[0] as Frame;
    const params = first.params as GitPush & { push_id: string };
    expect(params).toEqual({ ...PUSH, push_id: expect.stringMatching(/^gp_[0-9a-f-]{36}$/) });
    expect(first.id).toBe(params.push_id);
    expect(tunnel.untoldPushes).toBe(1);

    // The connection drops before the object answers: the same push, under the same id, again.
    first.ws.terminate();
    await until(() => pushes().length === 2, "the re-sent git_pushed");
    const second = pushes()[1] as Frame;
    expect(second.ws).not.toBe(first.ws);
    expect(second.id).toBe(first.id);
    expect(second.params).toEqual(first.params);

    object.send(second.ws, { id: second.id, result: {} });
    await until(() => tunnel.untoldPushes === 0, "the push told");
    second.ws.terminate();
    await until(() => object.hellos === 3, "the third hello");
    await new Promise((r) => setTimeout(r, 100));
    expect(pushes()).toHaveLength(2);
  });

  it("a push made while the tunnel is down goes out when it is back", async () => {
    object.holdHellos();
    for (const ws of object.sockets) ws.terminate();
    await until(() => !tunnel.connected && object.hellos === 2, "the tunnel back, not ready yet");
    tunnel.gitPushed({ ...PUSH, branch: "while-down" });
    await new Promise((r) => setTimeout(r, 100));
    expect(pushes()).toEqual([]);
    object.answerHellos();
    await until(() => pushes().length === 1, "the git_pushed after the hello");
    expect((pushes()[0] as Frame).params).toMatchObject({ branch: "while-down" });
  });

  it("each push has an id of its own: two pushes of one branch are two", async () => {
    tunnel.gitPushed(PUSH);
    tunnel.gitPushed({ ...PUSH, outcome: "up_to_date" });
    await until(() => pushes().length === 2, "both pushes");
    const [a, b] = pushes() as [Frame, Frame];
    expect(a.id).not.toBe(b.id);
  });
});
