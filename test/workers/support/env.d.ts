import type { Env as WorkerEnv } from "../../../worker/src/env.js";

declare global {
  namespace Cloudflare {
    /** The Worker's bindings, as `env` from "cloudflare:workers" sees them in tests. */
    interface Env extends WorkerEnv {}
  }
}
