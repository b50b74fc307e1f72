/**
 * What the host's egress gate reports of a session's network use: each refused connection as it
 * happens (`network_blocked`: an event on the session and an audit entry), and the hosts it
 * reached as running totals (`network_usage`: `session get` shows them). Totals, not increments,
 * so a lost or repeated report costs nothing.
 */
import { z } from "zod";
import { NetworkRefusalCodeSchema, PolicySourceSchema } from "./network.js";

const HostSchema = z.string().min(1).max(300);
const PortSchema = z.number().int().min(0).max(65_535);

/** One refused connection: where it went, how (the method, when the gate saw one), and why. */
export const NetworkBlockedSchema = z.object({
  host: HostSchema,
  port: PortSchema,
  /** `CONNECT` for an HTTPS tunnel, the request's method for plain HTTP. */
  method: z.string().max(32).nullable(),
  code: NetworkRefusalCodeSchema,
  reason: z.string().max(1024),
  /** Whose policy refused (absent when no policy did: an address, a limit). */
  source: PolicySourceSchema.optional(),
});
export type NetworkBlocked = z.infer<typeof NetworkBlockedSchema>;

/** A host a session reached (or tried to), with what passed. */
export const NetworkHostTotalsSchema = z.object({
  host: HostSchema,
  port: PortSchema,
  connections: z.number().int().nonnegative(),
  bytes_out: z.number().int().nonnegative(),
  bytes_in: z.number().int().nonnegative(),
  blocked: z.number().int().nonnegative(),
});
export type NetworkHostTotals = z.infer<typeof NetworkHostTotalsSchema>;

/** Most hosts one report carries (the busiest; the rest are summed in `other`). */
export const MAX_REPORTED_HOSTS = 100;

export const NetworkUsageSchema = z.object({
  hosts: z.array(NetworkHostTotalsSchema).max(MAX_REPORTED_HOSTS),
  /** Everything beyond the reported hosts, summed. */
  other: NetworkHostTotalsSchema.omit({ host: true, port: true }).optional(),
});
export type NetworkUsage = z.infer<typeof NetworkUsageSchema>;
