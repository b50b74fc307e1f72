import { z } from "zod";
import { parseJson } from "../../../protocol/json.js";
import { CallerPrincipalSchema, HostPrincipalSchema, type Principal } from "./tokens.js";

const PrincipalSchema = z.union([CallerPrincipalSchema, HostPrincipalSchema]);

/**
 * The Worker authenticates every request, then forwards it to a Durable Object with the principal
 * in this header. The Worker always overwrites it, so a client cannot forge it.
 */
export const PRINCIPAL_HEADER = "x-oubliette-principal";

/** A request for a Durable Object at `path`, carrying the authenticated principal. */
export function forward(request: Request, principal: Principal, path: string): Request {
  const url = new URL(request.url);
  const forwarded = new Request(`https://do.internal${path}${url.search}`, request);
  forwarded.headers.set(PRINCIPAL_HEADER, JSON.stringify(principal));
  return forwarded;
}

/** Reads the principal the Worker attached (Durable Objects are reachable only through the Worker). */
export function principalOf(request: Request): Principal | null {
  const raw = request.headers.get(PRINCIPAL_HEADER);
  if (!raw) return null;
  const json = parseJson(raw);
  const parsed = json.ok ? PrincipalSchema.safeParse(json.value) : null;
  return parsed?.success ? parsed.data : null;
}
