import { z } from "zod";

/** A session's id: `ses_` and 24 hex digits (minted by the Worker). Also a path segment on hosts. */
export const SESSION_ID_PATTERN = /^ses_[0-9a-f]{24}$/;

export const SessionIdSchema = z
  .string()
  .regex(SESSION_ID_PATTERN, "session_id looks like ses_ followed by 24 hex digits");

/** A project's id: `prj_` and 24 hex digits. Also a path segment and a container name on hosts. */
export const PROJECT_ID_PATTERN = /^prj_[0-9a-f]{24}$/;

export const ProjectIdSchema = z
  .string()
  .regex(PROJECT_ID_PATTERN, "project_id looks like prj_ followed by 24 hex digits");

/** A workspace's id within its project: a directory name, so no dots, slashes or upper case. */
export const WORKSPACE_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const WorkspaceIdSchema = z
  .string()
  .regex(
    WORKSPACE_ID_PATTERN,
    "workspace_id is 1-63 of a-z, 0-9, '_' and '-', starting with a letter or digit",
  );

/** The workspace every project has from its start. */
export const DEFAULT_WORKSPACE_ID = "default";
