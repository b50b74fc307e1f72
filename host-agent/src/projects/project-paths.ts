import { join } from "node:path";

/**
 * Where one project lives on this host: `<data-dir>/projects/<id>/` holds its record
 * (`project.json`) and its volume (`workspaces/`, one directory per workspace, mounted at
 * /workspace); `<socket-dir>/<id>/` holds its container socket (mounted at /mcp). Ids are
 * validated before they get here (`prj_` + hex, workspace ids without dots or slashes), so
 * joining them never leaves these directories.
 */
export class ProjectPaths {
  readonly root: string;
  readonly workspaces: string;
  readonly record: string;
  readonly socketDir: string;

  constructor(dataDir: string, socketRoot: string, projectId: string) {
    this.root = join(projectsDir(dataDir), projectId);
    this.workspaces = join(this.root, "workspaces");
    this.record = join(this.root, "project.json");
    this.socketDir = join(socketRoot, projectId);
  }

  workspace(workspaceId: string): string {
    return join(this.workspaces, workspaceId);
  }
}

/** The directory of every project's data on this host. */
export function projectsDir(dataDir: string): string {
  return join(dataDir, "projects");
}
