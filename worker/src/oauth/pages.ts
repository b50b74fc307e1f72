import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import type { Scope } from "../auth/scopes.js";
import { OAuthPaths } from "./endpoints.js";
import { escapeHtml, page } from "./page.js";

/** What each scope lets a client do, in words a person can weigh. */
function scopeMeaning(scope: string): string {
  if (scope === "admin") return "everything: every project, tokens, hosts and the audit log";
  if (scope === "admin:ro") return "read everything, change nothing";
  const match = /^project:([^:]+)(:ro)?$/.exec(scope);
  if (match) return match[2] ? `read project ${match[1]}` : `use and change project ${match[1]}`;
  return scope;
}

/**
 * The sign-in page: paste an API token once; `returnTo` is the authorization request to resume,
 * or the console (`for: "console"`), which shares this sign-in.
 */
export function signInPage(options: {
  returnTo: string;
  csrf: string;
  csrfCookie: string;
  error?: string;
  for?: "app" | "console";
}): Response {
  const headers = new Headers({ "set-cookie": options.csrfCookie });
  const error = options.error ? `<p class="error" role="alert">${escapeHtml(options.error)}</p>\n` : "";
  return page({
    title: "Sign in to Oubliette Edge",
    status: options.error ? 401 : 200,
    headers,
    body: `<h1>Sign in to Oubliette Edge</h1>
<p>${
      options.for === "console"
        ? "Sign in to the console with an API token you hold. You will see and may do what the token allows."
        : "An app wants to connect to this Oubliette Edge. Sign in with an API token you hold; you will then choose what the app may do (never more than your token can)."
    }</p>
${error}<form method="post" action="${OAuthPaths.signIn}">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<input type="hidden" name="return_to" value="${escapeHtml(options.returnTo)}">
<label for="token">API token</label>
<input type="password" id="token" name="token" autocomplete="off" required placeholder="oub_…">
<p><button type="submit">Sign in</button></p>
</form>`,
  });
}

/** The consent page: who asks, where access goes, and which scopes to grant. */
export function consentPage(options: {
  details: ConsentDescription;
  handle: string;
  headers: Headers;
  signedInAs: string;
  grantable: readonly Scope[];
  requested: readonly string[];
}): Response {
  const { details } = options;
  const name = escapeHtml(details.clientName);
  const origin = details.clientDomain
    ? `<p>Published by <strong>${escapeHtml(details.clientDomain)}</strong> (its client id is a document on that domain).</p>`
    : `<p><strong>Unverified:</strong> this app registered itself; its name is its own claim.</p>`;
  const loopback = details.redirectIsLoopback
    ? `<p class="warn">Access goes to a program on the computer that signed in (<code>${escapeHtml(details.redirectHost)}</code>). Continue only if you just started signing in from it.</p>`
    : "";
  const requested = new Set(options.requested);
  const boxes = options.grantable
    .map((scope, i) => {
      const checked = requested.has(scope) ? " checked" : "";
      return `<label for="scope-${i}"><input type="checkbox" id="scope-${i}" name="scope" value="${escapeHtml(scope)}"${checked}> <code>${escapeHtml(scope)}</code>: ${escapeHtml(scopeMeaning(scope))}</label>`;
    })
    .join("\n");
  const beyond = options.requested.filter((scope) => !options.grantable.includes(scope as Scope));
  const beyondNote =
    beyond.length > 0
      ? `<p class="warn">It also asked for ${beyond.map((s) => `<code>${escapeHtml(s)}</code>`).join(", ")}, which your token cannot grant.</p>`
      : "";
  const redirectOrigin = new URL(details.redirectUri).origin;
  return page({
    title: `Allow ${details.clientName}?`,
    headers: options.headers,
    formTargets: redirectOrigin === "null" ? [] : [redirectOrigin],
    body: `<h1>Allow ${name} to use Oubliette Edge?</h1>
${origin}
<p>Access will be sent to <strong>${escapeHtml(details.redirectHost)}</strong>:<br><code>${escapeHtml(details.redirectUri)}</code></p>
${loopback}<p>You are signed in as <code>${escapeHtml(options.signedInAs)}</code>.</p>
${beyondNote}<form method="post" action="${OAuthPaths.authorize}">
<input type="hidden" name="handle" value="${escapeHtml(options.handle)}">
<fieldset>
<legend>What may ${name} do?</legend>
${boxes}
</fieldset>
<p><button type="submit" name="decision" value="approve">Allow</button><button type="submit" name="decision" value="deny">Deny</button></p>
</form>`,
  });
}
