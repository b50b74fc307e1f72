import type { CallerPrincipal } from "../auth/tokens.js";
import { escapeHtml } from "../oauth/page.js";

/**
 * The console's one HTML page: a shell the client script (`/console/app.js`, a static asset
 * bundled from worker/console/client) fills. It carries who is signed in (token id and scopes,
 * for showing only the controls they may use: the server checks every call anyway) and the CSRF
 * token. No inline script or style: the CSP allows this origin's script and style files only, no
 * framing, and fetches to this origin alone.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

export function consoleShell(principal: CallerPrincipal, csrf: string, headers: Headers): Response {
  const who = JSON.stringify({ token_id: principal.tokenId, scopes: principal.scopes });
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="oubliette-csrf" content="${escapeHtml(csrf)}">
<meta name="oubliette-principal" content="${escapeHtml(who)}">
<title>Oubliette Edge console</title>
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<header id="top"></header>
<main id="app"><p>Loading the console…</p></main>
<noscript><p>The console needs JavaScript.</p></noscript>
</body>
</html>`;
  headers.set("content-type", "text/html; charset=utf-8");
  headers.set("cache-control", "no-store");
  headers.set("x-frame-options", "DENY");
  headers.set("x-content-type-options", "nosniff");
  headers.set("referrer-policy", "same-origin");
  headers.set("content-security-policy", CONSOLE_CSP);
  return new Response(html, { status: 200, headers });
}
