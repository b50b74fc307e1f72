/**
 * What a project's container sockets do with what arrives: a session's client calls go to its
 * SessionRuntime (and from there to its session object), the runner's connection and agent events
 * to the runner link, an agent's own git (git-remote-oubliette) to the project's AgentGit.
 */
import type { AgentGit } from "../git/agent-git.js";
import type { RunnerLink } from "../sessions/runner-link.js";
import type { ContainerHandlers } from "../socket/index.js";
import type { ProjectSessions } from "./project-sessions.js";
import { workspaceOfPath } from "./workspaces.js";

export function containerHandlers(
  sessions: ProjectSessions,
  runner: RunnerLink,
  git: { agentGit: AgentGit; workspaceRoot: string },
): ContainerHandlers {
  return {
    callerTool: async (sessionId, request, ctx) => sessions.runtime(sessionId).callerTool(request, ctx),
    oubliette: async (sessionId, method, params, ctx) =>
      sessions.runtime(sessionId).oubliette(method, params, ctx),
    admitRunner: (connection) => runner.admit(connection),
    runnerConnected: (connection, agents, ports) => runner.attach(connection, agents, ports),
    runnerGone: (connection) => runner.detach(connection),
    agentEvents: (sessionId, events) => sessions.get(sessionId)?.session.agentEvents(events),
    // A session this host does not run: an error, which the runner turns into a deny.
    approval: async (params, ctx) => sessions.runtime(params.session_id).approval(params, ctx),
    git: {
      list: (_sessionId, params) => git.agentGit.list(params),
      fetch: (_sessionId, params) => git.agentGit.fetch(params),
      read: (_sessionId, params) => git.agentGit.read(params),
      push: async (sessionId, params) => {
        const entry = sessions.get(sessionId);
        // A re-adopted session's workspace is not known here: the repository's path names it.
        const workspaceId = entry?.workspaceId || workspaceOfPath(params.git_dir, git.workspaceRoot);
        const pushed = await git.agentGit.push(workspaceId, params);
        entry?.session.gitPushed(pushed);
        return { commit: pushed.commit, outcome: pushed.outcome };
      },
    },
  };
}
