/**
 * An MCP client's side of OAuth sign-in, for tests: the official SDK's `OAuthClientProvider`,
 * kept in memory, whose "open the browser" step drives a real Chromium through the Worker's
 * sign-in and consent pages (an API token typed into the form, scopes ticked, Allow clicked) and
 * catches the redirect to a loopback callback. CIMD when given a metadata URL, else DCR.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { BrowserContext, Page } from "playwright-core";

/** A loopback page the authorization server redirects to; `url` is the redirect URI. */
export interface Callback {
  url: string;
  close(): Promise<void>;
}

export async function startCallback(): Promise<Callback> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>Signed in</title><p>Signed in.</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What the person does on the pages. */
export interface Person {
  /** The API token typed into the sign-in form (when the browser is not signed in yet). */
  token: string;
  /** The scopes to leave ticked on the consent page (default: what the page ticked). */
  scopes?: string[];
  /** Click Deny instead of Allow. */
  deny?: boolean;
}

/** What the browser saw on the way. */
export interface AuthorizationVisit {
  /** The consent page's text (empty when the flow did not reach it). */
  consentText: string;
  /** Where the browser ended: the callback with its query, or an error page's URL. */
  finalUrl: string;
  /** The page's text where it ended. */
  finalText: string;
}

/** Goes through sign-in and consent at `authorizationUrl` in `context`; where it ends. */
export async function authorizeInBrowser(
  context: BrowserContext,
  authorizationUrl: string,
  person: Person,
  callbackUrl: string,
): Promise<AuthorizationVisit> {
  const page = await context.newPage();
  try {
    await page.goto(authorizationUrl);
    if ((await page.locator("#token").count()) > 0) {
      await page.fill("#token", person.token);
      // A form the browser finds invalid (an empty token) is not sent: the page stays as it is.
      const sends = await page
        .locator("#token")
        .evaluate((input) =>
          (input as unknown as { form: { checkValidity(): boolean } }).form.checkValidity(),
        );
      // waitForLoadState would see the sign-in page, still loaded: mark its document, and wait
      // for a loaded document without the mark (the consent page, or an error page).
      await page.evaluate(() => {
        (globalThis as { signInPage?: boolean }).signInPage = true;
      });
      await page.click("button[type=submit]");
      if (sends)
        await page.waitForFunction(
          () =>
            (globalThis as { signInPage?: boolean }).signInPage !== true &&
            (globalThis as unknown as { document: { readyState: string } }).document.readyState ===
              "complete",
        );
    }
    const onConsent = (await page.locator("input[name=handle]").count()) > 0;
    if (!onConsent) return { consentText: "", finalUrl: page.url(), finalText: await bodyText(page) };
    const consentText = await bodyText(page);
    if (person.scopes !== undefined) {
      for (const box of await page.locator("input[name=scope]").all()) {
        await box.setChecked(person.scopes.includes((await box.getAttribute("value")) ?? ""));
      }
    }
    const button = person.deny ? "button[value=deny]" : "button[value=approve]";
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(callbackUrl) || url.pathname.startsWith("/oauth/"), {
        waitUntil: "load",
      }),
      page.click(button),
    ]);
    return { consentText, finalUrl: page.url(), finalText: await bodyText(page) };
  } finally {
    await page.close();
  }
}

async function bodyText(page: Page): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees on the page, as Playwright renders it
  return (await page.locator("body").innerText()).replace(/\s+/g, " ");
}

/** The SDK's client-side OAuth state, with Chromium as the user agent. */
export class BrowserOAuthClient implements OAuthClientProvider {
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = "";
  /** Each authorization the SDK asked for, as the browser went through it. */
  readonly visits: AuthorizationVisit[] = [];

  constructor(
    private readonly context: BrowserContext,
    private readonly callback: string,
    private readonly person: Person,
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl(): string {
    return this.callback;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Oubliette test client (DCR)",
      redirect_uris: [this.callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.#client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.#client = info;
  }

  tokens(): OAuthTokens | undefined {
    return this.#tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    return this.#verifier;
  }

  /** The code of the last authorization (from the callback URL), once the browser got there. */
  lastCode(): string {
    const last = this.visits.at(-1);
    const code = last ? new URL(last.finalUrl).searchParams.get("code") : null;
    if (!code)
      throw new Error(`no authorization code: the browser ended at ${last?.finalUrl}: ${last?.finalText}`);
    return code;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.visits.push(await authorizeInBrowser(this.context, url.href, this.person, this.callback));
  }
}

/** A PKCE pair (S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
