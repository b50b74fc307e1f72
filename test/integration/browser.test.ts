/**
 * A real Chromium (Debian's, driven by playwright-core) against a tiny loopback node:http server:
 * it fills and submits a form, and the cookies the server sets over plain http://127.0.0.1 come
 * back on the next requests. The OAuth sign-in page will rely on exactly this.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, withPage } from "../support/browser.js";

interface Seen {
  method: string;
  path: string;
  /** The Cookie header the browser sent, split into name=value pairs, sorted. */
  cookies: string[];
  /** The urlencoded form body of a POST. */
  form: Record<string, string>;
}

const FORM_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>sign in</title></head>
<body>
  <form method="post" action="/submit">
    <label>Name <input name="name" id="name"></label>
    <button type="submit" id="go">Sign in</button>
  </form>
</body></html>`;

/**
 * Every cookie the form page sets, each as its own Set-Cookie header, all HttpOnly. Observed in
 * Debian's Chromium 156 (playwright-core 1.65.1) over plain http://127.0.0.1 (and the same on
 * http://localhost): loopback counts as a secure context (`isSecureContext` is true), so a `Secure`
 * cookie, a `__Secure-` one and a `__Host-` one (Secure, Path=/, no Domain) are all kept and sent
 * back over http. `__Host-` without `Secure` is still rejected, as the prefix rules say. This is
 * Chromium's loopback rule, not a general http one: RFC 6265bis forbids Secure cookies from any
 * other http origin (not testable here), and other browsers may treat loopback differently.
 */
const SET_COOKIES = [
  "sid=s3cr3t; HttpOnly; Path=/; SameSite=Lax",
  "plain_secure=1; Secure; HttpOnly; Path=/; SameSite=Lax",
  "__Secure-pref=1; Secure; HttpOnly; Path=/; SameSite=Lax",
  "__Host-sid=1; Secure; HttpOnly; Path=/; SameSite=Lax",
  "__Host-insecure=1; HttpOnly; Path=/; SameSite=Lax",
];
/** What Chromium sends back: every cookie above but `__Host-insecure` (sorted as `seen` is). */
const SENT_BACK = ["__Host-sid=1", "__Secure-pref=1", "plain_secure=1", "sid=s3cr3t"];

let server: Server;
let origin: string;
let browser: Browser;
const seen: Seen[] = [];

function handle(request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const url = new URL(request.url ?? "/", origin);
    if (url.pathname === "/favicon.ico") {
      // Chromium asks for it on its own, whenever it likes: not part of what the test drives.
      response.writeHead(404).end();
      return;
    }
    const body = Buffer.concat(chunks).toString("utf8");
    seen.push({
      method: request.method ?? "",
      path: url.pathname,
      cookies: (request.headers.cookie ?? "")
        .split(";")
        .map((pair) => pair.trim())
        .filter((pair) => pair !== "")
        .sort(),
      form: request.method === "POST" ? Object.fromEntries(new URLSearchParams(body)) : {},
    });
    if (request.method === "GET" && url.pathname === "/") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8", "set-cookie": SET_COOKIES });
      response.end(FORM_PAGE);
    } else if (request.method === "POST" && url.pathname === "/submit") {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end('<!doctype html><p id="done">thanks</p>');
    } else if (request.method === "GET" && url.pathname === "/after") {
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("after");
    } else {
      response.writeHead(404).end();
    }
  });
}

beforeAll(async () => {
  server = createServer(handle);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

describe("real Chromium on loopback", () => {
  it("submits a form, and sends the cookies set over http://127.0.0.1 back", async () => {
    const result = await withPage(async (page, context) => {
      await page.goto(`${origin}/`);
      await page.fill("#name", "Ada Lovelace");
      await Promise.all([page.waitForURL(`${origin}/submit`), page.click("#go")]);
      const done = await page.textContent("#done");
      // A string: the page's globals are not in this project's (DOM-less) type libraries.
      const script = await page.evaluate<unknown>("({ cookie: document.cookie, secure: isSecureContext })");
      await page.goto(`${origin}/after`);
      const jar = (await context.cookies(origin))
        .map(({ name, secure, httpOnly }) => ({ name, secure, httpOnly }))
        .sort((a, b) => a.name.localeCompare(b.name));
      return { done, script, jar };
    }, browser);

    expect(result.done).toBe("thanks");
    expect(seen.map(({ method, path }) => `${method} ${path}`)).toEqual([
      "GET /",
      "POST /submit",
      "GET /after",
    ]);
    const [first, submit, after] = seen;
    expect(first?.cookies).toEqual([]);
    // The server received the value typed into the form.
    expect(submit?.form).toEqual({ name: "Ada Lovelace" });
    // The cookies set with the form page come back on the submit and on the request after it.
    expect(submit?.cookies).toEqual(SENT_BACK);
    expect(after?.cookies).toEqual(SENT_BACK);
    // HttpOnly holds: page script sees none of them; and loopback http is a secure context.
    expect(result.script).toEqual({ cookie: "", secure: true });
    expect(result.jar).toEqual([
      { name: "__Host-sid", secure: true, httpOnly: true },
      { name: "__Secure-pref", secure: true, httpOnly: true },
      { name: "plain_secure", secure: true, httpOnly: true },
      { name: "sid", secure: false, httpOnly: true },
    ]);
  });
});
