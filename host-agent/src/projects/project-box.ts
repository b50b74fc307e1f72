/**
 * One incarnation of a project's container (its "box") and what serves it: the container's
 * sockets and the link to the runner in it. A box is made before its container starts (the
 * sockets listen before the runner does) and closed when the container stops or is left running
 * for the next host-agent.
 */
import type { Logger } from "../../../lib/log.js";
import type { EgressGate } from "../egress/egress-gate.js";
import type { ProjectNetwork } from "../egress/project-network.js";
import type { AgentGit } from "../git/agent-git.js";
import type { ModelProxy } from "../models/model-proxy.js";
import type { Workload } from "../runtime/types.js";
import { RunnerLink } from "../sessions/runner-link.js";
import { containerHandlers } from "./container-handlers.js";
import { ContainerSockets } from "./container-sockets.js";
import type { OwnershipMode } from "./ownership.js";
import type { ProjectPaths } from "./project-paths.js";
import type { ProjectSessions } from "./project-sessions.js";

export interface Box {
  sockets: ContainerSockets;
  runner: RunnerLink;
  /** Settles once the sessions of the runner's latest hello are served again. */
  adopting: Promise<void>;
  workload: Workload | null;
  isolation: boolean;
  stopping: boolean;
}

export interface BoxOptions {
  projectId: string;
  paths: ProjectPaths;
  ownership: OwnershipMode;
  models: ModelProxy;
  egress: { gate: EgressGate; project: ProjectNetwork };
  sessions: ProjectSessions;
  agentGit: AgentGit;
  /** Where the workspaces are, as the container sees them. */
  workspaceRoot: string;
  logger: Logger;
}

/** A new box whose sockets are not yet listening (`openBox` starts them). */
export function newBox(o: BoxOptions, runnerToken: string, isolation: boolean): Box {
  const runner = new RunnerLink({
    logger: o.logger,
    onAgents: (agents) => {
      box.adopting = o.sessions
        .adopt(box, agents)
        .catch((err: Error) =>
          o.logger.error({ err: err.message }, "could not serve the runner's sessions again"),
        );
    },
  });
  const sockets = new ContainerSockets({
    projectId: o.projectId,
    paths: o.paths,
    ownership: o.ownership,
    runnerToken,
    handlers: containerHandlers(o.sessions, runner, {
      agentGit: o.agentGit,
      workspaceRoot: o.workspaceRoot,
    }),
    models: o.models,
    egress: o.egress,
    logger: o.logger,
  });
  const box: Box = {
    sockets,
    runner,
    adopting: Promise.resolve(),
    workload: null,
    isolation,
    stopping: false,
  };
  return box;
}

export async function closeBox(box: Box): Promise<void> {
  box.runner.close();
  await box.sockets.close();
}
