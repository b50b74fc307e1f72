/**
 * Every real agent CLI pushes with its own shell: the Worker under wrangler dev, a Docker
 * host-agent holding a git credential, each runtime's pinned CLI, a scripted fake model. A session
 * is spawned on a branch of its own; the model has the CLI run `git commit` and `git push origin
 * HEAD` in the container, which has no network: the push goes through git-remote-oubliette and
 * the host to a real git server on loopback (git http-backend behind Basic auth). Asserted on the
 * server's branches, on what the model received, and on the session's `git_pushed` event. The
 * five runtimes run at once, each answered by its own lane of the fake model.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import { type FakeModel, type ModelLane, startFakeModel } from "../fixtures/fake-model/index.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { GitServer } from "../support/git-server.js";
import { TestStack } from "../support/stack.js";
import { MODELS, modelEnv, runtimeOfRequest, shellCall } from "./agent-cli.js";

const TOKEN = "ghp-e2e-push-0123456789-secret";
const images = dockerContext().agentImages ?? {};
const runtimes = (Object.keys(images) as AgentRuntime[]).filter((r) => r !== "scripted");

let stack: TestStack;
let caller: TestCaller;
let fakeModel: FakeModel;
let server: GitServer;
let remote: string;
let secrets: string;

beforeAll(async () => {
  fakeModel = await startFakeModel({ laneOf: runtimeOfRequest });
  server = await GitServer.start({ auth: { username: "x-access-token", token: TOKEN } });
  remote = server.createRepo("acme/app", { "README.md": "upstream\n" });
  secrets = mkdtempSync(join(tmpdir(), "oub-e2e-git-"));
  const credentials = join(secrets, "git-credentials.json");
  writeFileSync(credentials, JSON.stringify({ acme: { token: TOKEN } }), { mode: 0o600 });
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: {
      ...modelEnv(fakeModel.url),
      OUBLIETTE_GIT_CREDENTIALS: credentials,
      // The git server is on loopback.
      OUBLIETTE_GIT_ALLOW_LOCAL_REMOTES: "1",
    },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 180_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await fakeModel?.close();
  await server?.close();
  if (secrets) rmSync(secrets, { recursive: true, force: true });
});

describe.concurrent.each(runtimes)("the %s runtime", (runtime) => {
  let model: ModelLane;
  beforeAll(() => {
    model = fakeModel.lane(runtime);
  });
  afterEach(() => {
    const left = model.remaining;
    model.reset();
    expect(left, "scripted replies the CLI never asked for").toBe(0);
  });

  it("commits and runs git push in its container; the branch arrives on the server through the host", async () => {
    const created = await caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `push-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
      default_agent: runtime,
      default_model: MODELS[runtime],
      limits: { memory_mb: 2048 },
      remote_url: remote,
      git_credential: "acme",
    });
    const projectId = created.project_id;
    try {
      const spawned = await caller.ok<{ session_id: string; branch: string; workspace_id: string }>(
        "session",
        {
          action: "spawn",
          project_id: projectId,
          branch: true,
        },
      );
      const command =
        `echo ${runtime} > agent.txt && git add agent.txt && ` +
        "git -c user.name=agent -c user.email=agent@example.com commit -qm 'From the agent' && git push origin HEAD 2>&1";
      model.script([{ text: "Pushing.", ...shellCall(runtime, command) }, { text: "Pushed." }]);
      const since = model.requests.length;
      await caller.ok("session", {
        action: "message",
        session_id: spawned.session_id,
        message: "Push your work.",
      });
      const pushed = await caller.waitFor(
        (e) => e.session_id === spawned.session_id && e.type === "git_pushed",
        240_000,
        "the git_pushed event",
      );
      expect(pushed).toMatchObject({
        branch: spawned.branch,
        outcome: "created",
        by: "agent",
        remote_url: remote,
      });
      const head = server.heads("acme/app")[spawned.branch];
      expect(head).toBe((pushed as { commit: string }).commit);
      await caller.waitFor(
        (e) => e.session_id === spawned.session_id && e.type === "completion",
        240_000,
        "the turn's completion",
      );
      // The model saw git's own report of the push.
      const seen = model
        .toolResults(since)
        .map((r) => r.text)
        .join("\n");
      expect(seen).toContain(spawned.branch);
      // What the agent committed is what the server has.
      const status = await caller.ok<{ head: string; clean: boolean }>("workspace", {
        action: "status",
        project_id: projectId,
        workspace_id: spawned.workspace_id,
      });
      expect(status).toMatchObject({ head, clean: true });
    } finally {
      await caller.call("project", { action: "delete", project_id: projectId, force: true });
    }
  }, 600_000);
});
