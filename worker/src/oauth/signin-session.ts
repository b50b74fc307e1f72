import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { randomHex, sha256Hex } from "../auth/digest.js";
import { type CallerPrincipal, principalById, sessionBoundRefusal } from "../auth/tokens.js";
import type { AppBindings } from "../http/auth-middleware.js";
import { objects } from "../objects/keys.js";
import { accessPrincipal } from "./access-identity.js";

/**
 * A person's sign-in to the authorization page: proved once with an API token they hold, then an
 * HttpOnly, SameSite=Lax cookie (Secure with a `__Host-` name, except on http loopback in local
 * development) holding a random id the directory keeps only as its hash. Every use re-checks the
 * token it stands for, so revoking that token ends the sign-in at once. Behind Cloudflare Access,
 * Access's own JWT signs the person in instead (access-identity.ts).
 */
export const SIGNIN_TTL_MS = 12 * 3_600_000;
/** How long a sign-in form may be sent after it was shown. */
const CSRF_TTL_S = 600;

function secure(c: Context<AppBindings>): boolean {
  return new URL(c.req.url).protocol === "https:";
}

export function cookieName(c: Context<AppBindings>, name: string): string {
  return secure(c) ? `__Host-oub-${name}` : `oub-${name}`;
}

export function cookie(
  c: Context<AppBindings>,
  name: string,
  value: string,
  maxAgeS: number,
  sameSite: string,
): string {
  const attributes = [
    `${cookieName(c, name)}=${value}`,
    "Path=/",
    "HttpOnly",
    `SameSite=${sameSite}`,
    `Max-Age=${maxAgeS}`,
  ];
  if (secure(c)) attributes.push("Secure");
  return attributes.join("; ");
}

/**
 * The principal the browser is signed in as: its sign-in cookie's (unless expired or its token
 * revoked), else the person Cloudflare Access vouches for (when configured); or null.
 */
export async function signedIn(c: Context<AppBindings>): Promise<CallerPrincipal | null> {
  const signin = await signedInOrWhy(c);
  return signin.ok ? signin.person : null;
}

/**
 * `signedIn`, saying why not when the sign-in's token may not sign anyone in: a droid's session
 * key (refused at the sign-in form, and here for a sign-in made with one before that).
 */
export async function signedInOrWhy(
  c: Context<AppBindings>,
): Promise<{ ok: true; person: CallerPrincipal } | { ok: false; reason: string | null }> {
  const value = getCookie(c, cookieName(c, "signin"));
  if (value !== undefined && /^[0-9a-f]{64}$/.test(value)) {
    const row = await objects.tokens(c.env).signin(await sha256Hex(value));
    if (row !== null) {
      const authority = await principalById(c.env, row.tokenId, row.issued);
      if (authority.ok) {
        const bound = sessionBoundRefusal(authority.principal);
        return bound === null ? { ok: true, person: authority.principal } : { ok: false, reason: bound };
      }
    }
  }
  const person = await accessPrincipal(c.env, c.req.raw);
  return person === null ? { ok: false, reason: null } : { ok: true, person };
}

/** Ends the browser's sign-in (its row and its cookie); the Set-Cookie header that clears it. */
export async function endSignin(c: Context<AppBindings>): Promise<string> {
  const value = getCookie(c, cookieName(c, "signin"));
  if (value !== undefined && /^[0-9a-f]{64}$/.test(value))
    await objects.tokens(c.env).endSignin(await sha256Hex(value));
  return cookie(c, "signin", "", 0, "Lax");
}

/** Starts a sign-in for `principal`; the Set-Cookie header that carries it. */
export async function startSignin(c: Context<AppBindings>, principal: CallerPrincipal): Promise<string> {
  const value = randomHex(32);
  await objects.tokens(c.env).createSignin(await sha256Hex(value), {
    tokenId: principal.tokenId,
    issued: principal.issued === true,
    expiresAt: Date.now() + SIGNIN_TTL_MS,
  });
  return cookie(c, "signin", value, SIGNIN_TTL_MS / 1000, "Lax");
}

/**
 * The sign-in form's CSRF token (double submit): a random value in a SameSite=Strict cookie and
 * in the form; a POST whose two differ, or that comes from another origin, is refused.
 */
export function csrfToken(): { value: string; cookie: (c: Context<AppBindings>) => string } {
  const value = randomHex(16);
  return { value, cookie: (c) => cookie(c, "csrf", value, CSRF_TTL_S, "Strict") };
}

export function csrfMatches(c: Context<AppBindings>, sent: string | undefined): boolean {
  const held = getCookie(c, cookieName(c, "csrf"));
  const origin = c.req.header("origin");
  if (origin !== undefined && origin !== new URL(c.req.url).origin) return false;
  return held !== undefined && sent !== undefined && held.length === 32 && held === sent;
}
