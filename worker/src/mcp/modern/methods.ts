import { discoverMethod } from "./discover.js";
import { TASKS_EXTENSION } from "./envelope.js";
import { subscriptionsListen } from "./listen.js";
import type { ModernMethod } from "./method.js";
import { resourcesList, resourcesRead, resourceTemplatesList } from "./session-resources.js";
import { tasksCancel, tasksGet, tasksUpdate } from "./tasks.js";
import { toolsCall, toolsList } from "./tool-methods.js";

/** The methods of the stateless era other than discovery; anything else is 404 / -32601. */
const SERVED: Record<string, ModernMethod> = {
  "tools/list": toolsList,
  "tools/call": toolsCall,
  "resources/templates/list": resourceTemplatesList,
  "resources/list": resourcesList,
  "resources/read": resourcesRead,
  "subscriptions/listen": subscriptionsListen,
  // The Tasks extension; it has no tasks/result and no tasks/list (unknown here: -32601).
  "tasks/get": tasksGet,
  "tasks/update": tasksUpdate,
  "tasks/cancel": tasksCancel,
};

/** The capabilities `server/discover` declares, from the methods served (never one without the other). */
function capabilities(methods: Record<string, ModernMethod>): Record<string, unknown> {
  const declared: Record<string, unknown> = { tools: {} };
  if (methods["resources/read"])
    declared.resources = { subscribe: methods["subscriptions/listen"] !== undefined };
  // An extension is declared under `extensions` (there is no top-level `tasks` capability).
  if (methods["tasks/get"]) declared.extensions = { [TASKS_EXTENSION]: {} };
  return declared;
}

export const MODERN_METHODS: Readonly<Record<string, ModernMethod>> = {
  ...SERVED,
  "server/discover": discoverMethod(capabilities(SERVED)),
};
