import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { randomHex } from "../auth/digest.js";
import type { AppBindings } from "../http/auth-middleware.js";
import { cookie, cookieName, SIGNIN_TTL_MS } from "../oauth/signin-session.js";

/**
 * The console's CSRF protection (double submit): a random value in an HttpOnly, SameSite=Strict
 * cookie set with the page, and in the page itself; every mutation sends it back (the
 * `x-oubliette-csrf` header of an API call, the `csrf` field of the sign-out form). A request whose
 * two values differ, or that a browser marks as coming from another site or origin, is refused.
 * Another site can neither read the page (no CORS) nor set the cookie, so it cannot forge one.
 */
const COOKIE = "console-csrf";
export const CSRF_HEADER = "x-oubliette-csrf";
const VALUE = /^[0-9a-f]{32}$/;

/** The browser's console CSRF token, and the Set-Cookie header that gives it one when it has none. */
export function consoleCsrf(c: Context<AppBindings>): { value: string; setCookie: string | null } {
  const held = getCookie(c, cookieName(c, COOKIE));
  if (held !== undefined && VALUE.test(held)) return { value: held, setCookie: null };
  const value = randomHex(16);
  return { value, setCookie: cookie(c, COOKIE, value, SIGNIN_TTL_MS / 1000, "Strict") };
}

/** Whether a mutation carries the browser's token and comes from this origin. */
export function consoleCsrfMatches(c: Context<AppBindings>, sent: string | undefined): boolean {
  const origin = c.req.header("origin");
  if (origin !== undefined && origin !== new URL(c.req.url).origin) return false;
  const site = c.req.header("sec-fetch-site");
  if (site !== undefined && site !== "same-origin") return false;
  const held = getCookie(c, cookieName(c, COOKIE));
  return held !== undefined && VALUE.test(held) && sent === held;
}
