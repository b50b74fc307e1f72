import type { ToolCatalog } from "../flows/catalog.js";
import { callerTools } from "./catalog.js";
import { actionLabel } from "./define.js";
import { droidCall, droidToolList } from "./droid-tools.js";

/**
 * The catalogue as the Durable Objects use it (flows/catalog.ts): a job's action by name, and the
 * tools a droid's key may use. Handed to them by the Worker's entry module.
 */
export const objectCatalog: ToolCatalog = {
  jobAction(tool, raw) {
    const registered = callerTools.get(tool);
    const parsed = registered?.arguments.safeParse(raw);
    if (!registered || !parsed?.success) return null;
    const args = parsed.data;
    const def = registered.definition.actions[args.action];
    if (!def) return null;
    return {
      label: actionLabel(registered.definition, args.action),
      access: def.access,
      target: def.target,
      args,
      run: (ctx) => def.handler(args, ctx),
    };
  },
  droidTools: droidToolList,
  droidCall,
};
