import type { Env as WorkerEnv } from "../../../worker/src/env.js";

declare global {
  namespace Cloudflare {
    /** The Worker's bindings, as `env` from "cloudflare:workers" sees them in tests. */
    interface Env extends WorkerEnv {}
    /** The Worker's main module: `exports.default` from "cloudflare:workers" is its loopback. */
    interface GlobalProps {
      mainModule: typeof import("../../../worker/src/index.js");
    }
  }
}
