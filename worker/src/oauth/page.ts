/**
 * The authorization pages' shell: one small HTML document, no script, no external asset, its one
 * inline style allowed by a per-response nonce. Headers: a strict CSP (`default-src 'none'`,
 * `frame-ancestors 'none'`, forms only to this origin and, on the consent page, to the client's
 * redirect origin, where the approval sends the browser), no framing, no caching, and no referrer
 * beyond this origin (same-origin keeps the Origin header on its own form posts, which the sign-in
 * form's CSRF check reads).
 */

const escapes: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** HTML-escapes text (client names, URIs and scopes come from whoever registered the client). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => escapes[char] ?? char);
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#1d1d1b}
main{max-width:34rem;margin:3rem auto;padding:2rem;background:#fff;border:1px solid #ddd;border-radius:8px}
h1{font-size:1.4rem;margin-top:0}
label{display:block;margin:.4rem 0}
input[type=password],input[type=text]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
fieldset{border:1px solid #ccc;border-radius:6px;margin:1rem 0}
button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem;cursor:pointer}
.warn{background:#fff4e0;border-left:4px solid #d98b00;padding:.5rem .8rem}
.error{background:#fde8e8;border-left:4px solid #c62828;padding:.5rem .8rem}
code{word-break:break-all}
`;

export interface PageOptions {
  title: string;
  /** Body HTML (already escaped where it holds outside text). */
  body: string;
  status?: number;
  /** Origins a form on the page may be sent to (or redirect to) besides this one. */
  formTargets?: readonly string[];
  /** Extra headers (cookies the page sets, the library's consent headers). */
  headers?: Headers;
}

export function page(options: PageOptions): Response {
  const nonce = crypto.randomUUID().replace(/-/g, "");
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(options.title)}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<main>
${options.body}
</main>
</body>
</html>`;
  const headers = new Headers(options.headers);
  headers.set("content-type", "text/html; charset=utf-8");
  headers.set("cache-control", "no-store");
  headers.set("x-frame-options", "DENY");
  headers.set("x-content-type-options", "nosniff");
  headers.set("referrer-policy", "same-origin");
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(" ");
  headers.set(
    "content-security-policy",
    `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  );
  return new Response(html, { status: options.status ?? 200, headers });
}

/** A page saying what went wrong, with no way onward but starting again from the client. */
export function errorPage(title: string, message: string, status = 400): Response {
  return page({
    title,
    status,
    body: `<h1>${escapeHtml(title)}</h1>\n<p class="error" role="alert">${escapeHtml(message)}</p>\n<p>Start signing in again from the app you were using.</p>`,
  });
}
