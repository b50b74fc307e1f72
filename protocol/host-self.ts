import { z } from "zod";

/**
 * `GET /v1/hosts/self`: what the Worker makes of a host token, so a host can be checked before
 * it is started (`host-agent doctor`). `host_id` is the host an enrolled token is bound to, or
 * null for the shared host token (`OUBLIETTE_HOST_TOKEN`), which any host id may use.
 */
export const HOST_SELF_PATH = "/v1/hosts/self";

export const HostSelfSchema = z.object({ host_id: z.string().min(1).max(128).nullable() });
export type HostSelf = z.infer<typeof HostSelfSchema>;
