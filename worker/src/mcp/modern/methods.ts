import { discoverMethod } from "./discover.js";
import { subscriptionsListen } from "./listen.js";
import type { ModernMethod } from "./method.js";
import { resourcesList, resourcesRead, resourceTemplatesList } from "./session-resources.js";
import { toolsCall, toolsList } from "./tool-methods.js";

/** The methods of the stateless era other than discovery; anything else is 404 / -32601. */
const SERVED: Record<string, ModernMethod> = {
  "tools/list": toolsList,
  "tools/call": toolsCall,
  "resources/templates/list": resourceTemplatesList,
  "resources/list": resourcesList,
  "resources/read": resourcesRead,
  "subscriptions/listen": subscriptionsListen,
};

/** The capabilities `server/discover` declares, from the methods served (never one without the other). */
function capabilities(methods: Record<string, ModernMethod>): Record<string, unknown> {
  const declared: Record<string, unknown> = { tools: {} };
  if (methods["resources/read"])
    declared.resources = { subscribe: methods["subscriptions/listen"] !== undefined };
  return declared;
}

export const MODERN_METHODS: Readonly<Record<string, ModernMethod>> = {
  ...SERVED,
  "server/discover": discoverMethod(capabilities(SERVED)),
};
