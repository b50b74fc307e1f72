import { join } from "node:path";
import { runnerSocketDir, sessionSocketDir, sessionsSocketDir } from "../../../protocol/container-layout.js";

/**
 * Where one project lives on this host: `<data-dir>/projects/<id>/` holds its record
 * (`project.json`), in filesystem disk mode the image of its volume (`disk.img`), and its volume
 * (`volume/`: the loop mount, or a plain directory) with `workspaces/` (one directory per
 * workspace, mounted at /workspace) and `homes/` (one per session, mounted at /home/agents);
 * `<socket-dir>/<id>/` holds its sockets (mounted at /mcp). Ids are validated before they get
 * here (`prj_`/`ses_` + hex, workspace ids without dots or slashes), so joining them never leaves
 * these directories.
 */
export class ProjectPaths {
  readonly root: string;
  readonly record: string;
  readonly image: string;
  readonly volume: string;
  readonly workspaces: string;
  readonly homes: string;
  readonly socketDir: string;
  /** Where the workspaces were before volumes (moved into the volume on first use). */
  readonly legacyWorkspaces: string;
  /** The project's own bare repository (host-owned, outside the volume: docs/git.md). */
  readonly repo: string;
  /** Bundles on their way from a workspace into the repository. */
  readonly incoming: string;

  constructor(dataDir: string, socketRoot: string, projectId: string) {
    this.root = join(projectsDir(dataDir), projectId);
    this.record = join(this.root, "project.json");
    this.image = join(this.root, "disk.img");
    this.volume = join(this.root, "volume");
    this.workspaces = join(this.volume, "workspaces");
    this.homes = join(this.volume, "homes");
    this.socketDir = join(socketRoot, projectId);
    this.legacyWorkspaces = join(this.root, "workspaces");
    this.repo = join(this.root, "git", "repo.git");
    this.incoming = join(this.root, "git", "incoming");
  }

  workspace(workspaceId: string): string {
    return join(this.workspaces, workspaceId);
  }

  home(sessionId: string): string {
    return join(this.homes, sessionId);
  }

  /** The home of `container exec` and the setup commands (never a session id: those start `ses_`). */
  get execHome(): string {
    return join(this.homes, EXEC_HOME);
  }

  get runnerSocketDir(): string {
    return runnerSocketDir(this.socketDir);
  }

  get sessionsSocketDir(): string {
    return sessionsSocketDir(this.socketDir);
  }

  sessionSocketDir(sessionId: string): string {
    return sessionSocketDir(this.socketDir, sessionId);
  }
}

/** The exec identity's home's name among the sessions' homes. */
export const EXEC_HOME = "_exec";

/** The directory of every project's data on this host. */
export function projectsDir(dataDir: string): string {
  return join(dataDir, "projects");
}
