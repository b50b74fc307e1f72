/**
 * Removes the containers of a stack's host-agents. A stopped host-agent leaves its containers
 * running on purpose (a restart re-adopts them); a throwaway stack (tests, the benchmark) has no
 * next start, so its containers go with it instead of piling up on the engine.
 */
import Dockerode from "dockerode";
import { dockerSocketPath, pingDocker } from "../../host-agent/src/runtime/docker-ping.js";
import { HOST_LABEL, MANAGED_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";

/** Removes every container labelled with one of `hostIds`; returns how many. No engine: 0. */
export async function removeHostContainers(hostIds: readonly string[]): Promise<number> {
  const socketPath = dockerSocketPath();
  if (hostIds.length === 0 || socketPath === null || !(await pingDocker(socketPath))) return 0;
  const docker = new Dockerode({ socketPath });
  let removed = 0;
  for (const hostId of new Set(hostIds)) {
    const containers = await docker.listContainers({
      all: true,
      filters: { label: [`${MANAGED_LABEL}=true`, `${HOST_LABEL}=${hostId}`] },
    });
    for (const container of containers) {
      await docker
        .getContainer(container.Id)
        .remove({ force: true })
        .then(() => {
          removed += 1;
        })
        .catch(() => {});
    }
  }
  return removed;
}
