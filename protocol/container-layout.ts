/**
 * Where a project container's shared pieces are, and which uid and gid each kind of process runs
 * as. One table for the host-agent (which makes the directories and hands out the ids) and the
 * runner (which starts agents as them), so both sides agree.
 *
 * The socket directory (`/mcp` in a container) holds one directory per peer, each reachable only
 * by its owner, so the kernel decides who may even connect:
 * - `runner/relay.sock`, `runner/model.sock` and `runner/egress.sock`: the runner (uid 0 in the
 *   container) only;
 * - `sessions/<session_id>/relay.sock`: that session's uid only (its agent and container-client).
 */
export const ContainerPaths = {
  /** The project's socket directory inside a container. */
  socketDir: "/mcp",
  /** The project's workspaces (one directory each). */
  workspaces: "/workspace",
  /** The agents' homes (one directory per session, private to its uid). */
  homes: "/home/agents",
} as const;

/**
 * What a host mounts, read-only, into an image that is not one of ours (the runner kit): a Node
 * and the glibc it runs on behind a loader of its own, the container-side programs and the git
 * remote helper. Its `bin` comes last on the container's PATH: the image's own tools come first.
 * The root is short on purpose: the kit's programs name its loader in the bytes their files
 * keep for the loader's path (28 on x86-64).
 */
export const KitPaths = {
  root: "/.oubliette",
  bin: "/.oubliette/bin",
  node: "/.oubliette/bin/node",
  setpriv: "/.oubliette/bin/setpriv",
  loader: "/.oubliette/ld.so",
  containerClient: "/.oubliette/container-client.mjs",
  scriptedDroid: "/.oubliette/scripted-droid.mjs",
} as const;

const RUNNER_DIR = "runner";
/** Joins path parts with "/" (inputs are fixed names and validated ids; no normalising needed). */
function join(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}
const SESSIONS_DIR = "sessions";
const RELAY_SOCKET = "relay.sock";
const MODEL_SOCKET = "model.sock";
const EGRESS_SOCKET = "egress.sock";

/** The runner's directory in a socket directory (host or container path alike). */
export function runnerSocketDir(socketDir: string): string {
  return join(socketDir, RUNNER_DIR);
}

/** The runner's relay socket. */
export function runnerSocketPath(socketDir: string): string {
  return join(socketDir, RUNNER_DIR, RELAY_SOCKET);
}

/** The host's model proxy, beside the runner's socket: only the runner's forwarder connects. */
export function modelSocketPath(socketDir: string): string {
  return join(socketDir, RUNNER_DIR, MODEL_SOCKET);
}

/** The host's egress gate, beside the runner's socket: only the runner's proxy connects. */
export function egressSocketPath(socketDir: string): string {
  return join(socketDir, RUNNER_DIR, EGRESS_SOCKET);
}

/** The directory holding the sessions' own directories. */
export function sessionsSocketDir(socketDir: string): string {
  return join(socketDir, SESSIONS_DIR);
}

/** One session's directory (session ids are `ses_` + hex: joining them never leaves it). */
export function sessionSocketDir(socketDir: string, sessionId: string): string {
  return join(socketDir, SESSIONS_DIR, sessionId);
}

/** One session's relay socket: its container-client connects here and nowhere else. */
export function sessionSocketPath(socketDir: string, sessionId: string): string {
  return join(socketDir, SESSIONS_DIR, sessionId, RELAY_SOCKET);
}

/** The model socket's name (beside the runner's relay socket). */
export const MODEL_SOCKET_NAME = MODEL_SOCKET;
/** The egress socket's name (beside the runner's relay socket). */
export const EGRESS_SOCKET_NAME = EGRESS_SOCKET;

/**
 * Identities in a project container (Docker). The kernel keeps processes of different uids from
 * reading each other's `/proc/<pid>/environ`, `fd/` and memory, and root's from everyone:
 * - the runner is uid 0 with no capability but SETUID, SETGID (to start agents as their uids) and
 *   KILL (to stop them); no agent ever runs as 0;
 * - each session's processes run as a uid of its own (`SESSION_UID_BASE` + an index the host
 *   allocates per project), never shared with another session of the project;
 * - a workspace's files belong to a group: the project's (`PROJECT_GID`) without isolation, or
 *   the workspace's own (`WORKSPACE_GID_BASE` + its index) with it; directories are setgid and
 *   agents' umask is 002, so sessions of one workspace share its files and nothing else;
 * - `container exec` runs as `EXEC_UID` (the image's `droid` user), in every workspace's group.
 */
export const Identities = {
  runnerUid: 0,
  execUid: 1000,
  projectGid: 1000,
  workspaceGidBase: 20_000,
  /** Most workspaces with a group of their own per project. */
  maxWorkspaceIndex: 9_999,
  sessionUidBase: 30_000,
  /** Session uids wrap after this many (a uid is reused only after its processes are gone). */
  sessionUidCount: 35_000,
} as const;

/** The uid of a project's session number `index`. */
export function sessionUid(index: number): number {
  return Identities.sessionUidBase + (index % Identities.sessionUidCount);
}

/** The group of a workspace: its own under isolation, the project's otherwise. */
export function workspaceGid(isolation: boolean, workspaceIndex: number): number {
  return isolation ? Identities.workspaceGidBase + workspaceIndex : Identities.projectGid;
}

/**
 * Git refuses a repository owned by another uid ("dubious ownership"); sessions of a workspace
 * are different uids sharing one group, so inside the container git trusts the workspaces'
 * repositories (environment config, command-line scope). This is the container's git only: the
 * host never trusts a workspace's repository.
 */
export const CONTAINER_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: "safe.directory",
  GIT_CONFIG_VALUE_0: "*",
};

/** The transport of `git-remote-oubliette`: a URL `oubliette::<remote>` is served by the host. */
export const GIT_REMOTE_HELPER = "oubliette";

/**
 * A session's git environment: the one above and, when the project has a remote, that remote
 * sent through `git-remote-oubliette` (the host pushes for the container, which has no network).
 */
export function sessionGitEnv(remoteUrl: string | undefined): Record<string, string> {
  if (remoteUrl === undefined) return { ...CONTAINER_GIT_ENV };
  return {
    ...CONTAINER_GIT_ENV,
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_1: `url.${GIT_REMOTE_HELPER}::${remoteUrl}.insteadOf`,
    GIT_CONFIG_VALUE_1: remoteUrl,
  };
}
