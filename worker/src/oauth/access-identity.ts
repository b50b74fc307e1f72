import { createRemoteJWKSet, jwtVerify } from "jose";
import { z } from "zod";
import { ScopeSchema } from "../auth/scopes.js";
import type { CallerPrincipal } from "../auth/tokens.js";
import type { Env } from "../env.js";
import { createLog, errorMessage } from "../log.js";

const log = createLog({ component: "oauth-access" });

/**
 * Signing in behind Cloudflare Access: when the Worker sits behind an Access application, the
 * person has already proved who they are to Access, which sends a signed JWT with every request
 * (`Cf-Access-Jwt-Assertion`, or the `CF_Authorization` cookie). With the team domain and the
 * application's audience configured, that JWT (verified against the team's JWKS: signature, issuer,
 * audience, expiry) signs the person in to the authorization page with the scopes configured for
 * Access users, instead of a pasted API token. Without both settings nothing here is trusted.
 */
export interface AccessSettings {
  /** `https://<team>.cloudflareaccess.com`: the JWT's issuer, whose `/cdn-cgi/access/certs` holds the keys. */
  teamOrigin: string;
  /** The Access application's audience tag. */
  audience: string;
  scopes: z.infer<typeof ScopeSchema>[];
}

const SettingsSchema = z.object({
  team: z
    .string()
    .min(1)
    .transform((team) =>
      team.startsWith("https://") || team.startsWith("http://") ? team : `https://${team}`,
    )
    .pipe(z.url()),
  audience: z.string().min(1),
  scopes: z.array(ScopeSchema).min(1),
});

/** The Access settings, or null when Access sign-in is not configured (both are needed). */
export function accessSettings(env: Env): AccessSettings | null {
  if (!env.OUBLIETTE_ACCESS_TEAM_DOMAIN || !env.OUBLIETTE_ACCESS_AUD) return null;
  const parsed = SettingsSchema.safeParse({
    team: env.OUBLIETTE_ACCESS_TEAM_DOMAIN.trim(),
    audience: env.OUBLIETTE_ACCESS_AUD.trim(),
    scopes: (env.OUBLIETTE_ACCESS_SCOPES ?? "admin")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  });
  if (!parsed.success) {
    throw new Error(`invalid Access configuration: ${parsed.error.issues[0]?.message ?? "unknown"}`);
  }
  return {
    teamOrigin: new URL(parsed.data.team).origin,
    audience: parsed.data.audience,
    scopes: parsed.data.scopes,
  };
}

const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

function keys(teamOrigin: string): ReturnType<typeof createRemoteJWKSet> {
  let set = keySets.get(teamOrigin);
  if (!set) {
    set = createRemoteJWKSet(new URL(`${teamOrigin}/cdn-cgi/access/certs`), { timeoutDuration: 5_000 });
    keySets.set(teamOrigin, set);
  }
  return set;
}

/** The Access JWT a request carries (header first, then Access's cookie). */
function presentedJwt(request: Request): string | null {
  const header = request.headers.get("cf-access-jwt-assertion");
  if (header) return header.trim();
  const cookie = request.headers.get("cookie") ?? "";
  const match = /(?:^|;\s*)CF_Authorization=([^;]+)/.exec(cookie);
  return match?.[1] ?? null;
}

/** An id for the library and the audit log: `access-<email>` (no colon, which the library forbids). */
function principalId(email: string): string {
  return `access-${email.toLowerCase().replace(/[^a-z0-9@._+-]/g, "_")}`;
}

/** The person Access vouches for, as a caller with the Access scopes; null when none is (validly) presented. */
export async function accessPrincipal(env: Env, request: Request): Promise<CallerPrincipal | null> {
  const settings = accessSettings(env);
  if (settings === null) return null;
  const jwt = presentedJwt(request);
  if (jwt === null || jwt.length > 8_192) return null;
  try {
    const { payload } = await jwtVerify(jwt, keys(settings.teamOrigin), {
      issuer: settings.teamOrigin,
      audience: settings.audience,
      algorithms: ["RS256"],
    });
    const email = z.email().safeParse(payload.email);
    if (!email.success) return null;
    return { kind: "caller", tokenId: principalId(email.data), scopes: settings.scopes };
  } catch (error) {
    log.warn("Access JWT refused", { error: errorMessage(error) });
    return null;
  }
}
