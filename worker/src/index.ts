import { app } from "./app.js";
import type { Env } from "./env.js";
import { provideCatalog } from "./flows/catalog.js";
import { objectCatalog } from "./tools/object-catalog.js";

export { AuditLogDurableObject } from "./audit/audit-log-do.js";
export { HostRegistryDurableObject } from "./hosts/host-registry-do.js";
export { JobDirectoryDurableObject } from "./jobs/job-directory-do.js";
export { JobDurableObject } from "./jobs/job-do.js";
export { McpSessionDurableObject } from "./mcp/mcp-session-do.js";
export { ProjectDirectoryDurableObject } from "./projects/project-directory-do.js";
export { ProjectDurableObject } from "./projects/project-do.js";
export { ScheduleDirectoryDurableObject } from "./schedules/schedule-directory-do.js";
export { ScheduleDurableObject } from "./schedules/schedule-do.js";
export { SessionDurableObject } from "./session/session-do.js";
export { TokenDirectoryDurableObject } from "./tokens/token-directory-do.js";

// The objects run the catalogue's tools (jobs, a droid's calls) without importing tools/.
provideCatalog(objectCatalog);

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
