import { AuthorizationError, CimdFetchError, type OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { type Context, Hono } from "hono";
import { audit } from "../audit/audit.js";
import { type Scope, ScopeSchema } from "../auth/scopes.js";
import { authenticate, sessionBoundRefusal } from "../auth/tokens.js";
import { CONSOLE_PATH } from "../console/console-path.js";
import { config, type Env } from "../env.js";
import type { AppBindings } from "../http/auth-middleware.js";
import { createLog } from "../log.js";
import { objects } from "../objects/keys.js";
import { oauthRoles } from "./authorization-server.js";
import { refusedClientUrl } from "./client-url-guard.js";
import { OAuthPaths } from "./endpoints.js";
import { GrantPropsSchema } from "./grant-principal.js";
import { covers, grantableScopes } from "./grant-scopes.js";
import { errorPage } from "./page.js";
import { consentPage, signInPage } from "./pages.js";
import { userGrants } from "./revoke.js";
import { csrfMatches, csrfToken, signedIn, startSignin } from "./signin-session.js";

const log = createLog({ component: "oauth-authorize" });

/** Largest sign-in or consent form accepted. */
const MAX_FORM_BYTES = 16 * 1024;

/**
 * The authorization endpoint, which the OAuth library leaves to the application: validate the
 * request (the library), sign the person in (an API token, once per browser), show what the client
 * is and let them choose the scopes to grant (never more than their token holds), then complete
 * the authorization (the library) and record the grant as a principal of its own.
 */
export const authorizeRoutes = new Hono<AppBindings>();

function helpers(c: Context<AppBindings>): OAuthHelpers {
  return oauthRoles(new URL(c.req.url).origin).server.getOAuthApi(c.env);
}

/** The answer to a failed authorization step: back to the client only when the library vouches for its redirect. */
function authorizationFailure(error: unknown): Response {
  if (error instanceof AuthorizationError && error.redirectTo)
    return Response.redirect(error.redirectTo, 302);
  if (error instanceof AuthorizationError) return errorPage("This sign-in cannot go on", error.description);
  if (error instanceof CimdFetchError) {
    log.warn("client metadata document refused", { reason: error.reason });
    return errorPage(
      "This app could not be verified",
      "Its client metadata document could not be fetched or is not valid.",
    );
  }
  throw error;
}

async function readForm(c: Context<AppBindings>): Promise<FormData | null> {
  const length = Number(c.req.header("content-length") ?? "0");
  if (length > MAX_FORM_BYTES) return null;
  const type = c.req.header("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded") && !type.startsWith("multipart/form-data"))
    return null;
  try {
    return await c.req.raw.formData();
  } catch {
    return null;
  }
}

authorizeRoutes.get(OAuthPaths.authorize, async (c) => {
  const clientId = new URL(c.req.url).searchParams.get("client_id") ?? "";
  const refused = refusedClientUrl(clientId, config(c.env).oauthDevClients);
  if (refused !== null) return errorPage("This app cannot sign in here", refused);
  const oauth = helpers(c);
  try {
    const request = await oauth.parseAuthRequest(c.req.raw);
    const person = await signedIn(c);
    if (person === null) {
      const csrf = csrfToken();
      const url = new URL(c.req.url);
      return signInPage({
        returnTo: `${url.pathname}${url.search}`,
        csrf: csrf.value,
        csrfCookie: csrf.cookie(c),
      });
    }
    const details = await oauth.describeConsent(request);
    const consent = await oauth.beginConsent(request);
    return consentPage({
      details,
      handle: consent.handle,
      headers: consent.headers,
      signedInAs: person.tokenId,
      grantable: grantableScopes(person.scopes, request.scope),
      requested: request.scope,
    });
  } catch (error) {
    return authorizationFailure(error);
  }
});

authorizeRoutes.post(OAuthPaths.signIn, async (c) => {
  const form = await readForm(c);
  if (form === null) return errorPage("Sign-in refused", "The form could not be read.");
  const returnTo = String(form.get("return_to") ?? "");
  const forConsole = returnTo === CONSOLE_PATH;
  if (!forConsole && !returnTo.startsWith(`${OAuthPaths.authorize}?`)) {
    return errorPage("Sign-in refused", "The form does not say which sign-in to go back to.");
  }
  if (!csrfMatches(c, form.get("csrf")?.toString())) {
    return errorPage("Sign-in refused", "The form expired or was not sent from this page. Start again.", 403);
  }
  const principal = await authenticate(c.env, String(form.get("token") ?? "").trim());
  // A droid's session key signs nobody in: it works only from inside its session.
  const bound = principal === null ? null : sessionBoundRefusal(principal);
  if (principal?.kind !== "caller" || bound !== null) {
    const csrf = csrfToken();
    return signInPage({
      returnTo,
      csrf: csrf.value,
      csrfCookie: csrf.cookie(c),
      error: bound ?? "That is not a valid API token (or it was revoked or has expired).",
      for: forConsole ? "console" : "app",
    });
  }
  const headers = new Headers({ location: returnTo, "cache-control": "no-store" });
  headers.append("set-cookie", await startSignin(c, principal));
  audit(
    c.env,
    { token_id: principal.tokenId, action: "oauth.sign_in", target: null, outcome: "ok" },
    (p) => c.executionCtx.waitUntil(p),
    log,
  );
  return new Response(null, { status: 303, headers });
});

authorizeRoutes.post(OAuthPaths.authorize, async (c) => {
  const form = await readForm(c);
  if (form === null) return errorPage("Authorization refused", "The form could not be read.");
  const handle = String(form.get("handle") ?? "");
  const person = await signedIn(c);
  if (person === null) {
    return errorPage("Your sign-in ended", "Sign in again from the app you were using.", 401);
  }
  const oauth = helpers(c);
  try {
    if (form.get("decision") !== "approve") {
      const denied = await oauth.denyConsent(c.req.raw, handle);
      return new Response(null, { status: 302, headers: denied.headers });
    }
    const chosen = [...new Set(form.getAll("scope").map(String))];
    const beyond = chosen.filter((scope) => {
      const parsed = ScopeSchema.safeParse(scope);
      return !parsed.success || !covers(person.scopes, parsed.data);
    });
    if (beyond.length > 0) {
      return errorPage("Authorization refused", `Your token cannot grant ${beyond.join(", ")}.`, 403);
    }
    if (chosen.length === 0) {
      return errorPage("Authorization refused", "Choose at least one thing the app may do.");
    }
    const scopes = chosen as Scope[];
    const approved = await oauth.approveConsent(c.req.raw, handle);
    const details = await oauth.describeConsent(approved.request);
    const origin = new URL(c.req.url).origin;
    const directory = objects.tokens(c.env);
    const grant = await directory.createGrant({
      oauthGrantId: null,
      oauthUserId: person.tokenId,
      issuer: origin,
      clientId: details.clientId,
      clientName: details.clientName,
      clientVerified: details.clientDomain !== undefined,
      redirectUri: details.redirectUri,
      scopes,
      signedInAs: person.tokenId,
    });
    const { redirectTo } = await oauth.completeAuthorization({
      request: approved.request,
      userId: person.tokenId,
      metadata: { grant: grant.id },
      scope: grant.scopes,
      props: { grant: grant.id },
    });
    await linkGrant(c.env, oauth, person.tokenId, grant.id);
    audit(
      c.env,
      {
        token_id: person.tokenId,
        action: "oauth.grant_issued",
        target: `${grant.id} client=${grant.clientId}`,
        outcome: "ok",
      },
      (p) => c.executionCtx.waitUntil(p),
      log,
    );
    approved.headers.set("location", redirectTo);
    return new Response(null, { status: 302, headers: approved.headers });
  } catch (error) {
    return authorizationFailure(error);
  }
});

/**
 * Notes the library's id of the grant just stored beside the directory's, so that revoking the
 * directory's grant revokes its OAuth tokens too; and marks revoked the directory's grants of this
 * person the library no longer holds (it revokes the earlier grant of the same person, client and
 * resource when it stores a new one).
 */
async function linkGrant(env: Env, oauth: OAuthHelpers, userId: string, grantId: string): Promise<void> {
  const directory = objects.tokens(env);
  const live: string[] = [];
  for await (const summary of userGrants(oauth, userId)) {
    const mine = GrantPropsSchema.safeParse(summary.metadata).data?.grant;
    if (mine === undefined) continue;
    live.push(mine);
    if (mine === grantId) await directory.setOauthGrant(grantId, summary.id);
  }
  await directory.revokeReplacedGrants(userId, live);
}
