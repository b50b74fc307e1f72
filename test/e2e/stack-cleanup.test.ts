/**
 * A stopped host-agent leaves its containers running on purpose (its next start re-adopts them);
 * a throwaway stack (tests, the benchmark) removes them when it stops, so they do not pile up.
 */
import Dockerode from "dockerode";
import { expect, it } from "vitest";
import { HOST_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { spawnDroid } from "./support.js";

it("a throwaway stack removes its host-agents' containers when it stops", async () => {
  const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });
  const stack = await TestStack.start();
  const host = await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  const caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  await spawnDroid(caller);
  await caller.close();
  const mine = () =>
    docker.listContainers({ all: true, filters: { label: [`${HOST_LABEL}=${host.hostId}`] } });
  expect(await mine()).toHaveLength(1);
  await stack.stop();
  expect(await mine()).toEqual([]);
});
