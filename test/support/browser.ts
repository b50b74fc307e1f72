/**
 * A real Chromium for tests, driven by playwright-core: Debian's browser at the path the browser
 * globalSetup provides (test/support/browser-setup.ts), launched only with the flags these machines
 * allow. playwright-core never downloads a browser. Pages only ever talk to loopback.
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { inject } from "vitest";
import { CHROMIUM_ARGS } from "../../scripts/browser/ensure-chromium.js";

const LAUNCH_TIMEOUT_MS = 60_000;

/** Launches headless Chromium; the caller closes it (`await browser.close()`). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: inject("chromiumPath"),
    headless: true,
    args: [...CHROMIUM_ARGS],
    timeout: LAUNCH_TIMEOUT_MS,
  });
}

/**
 * Runs `fn` with a page in a fresh browser context (its own cookies and storage), and always
 * closes the context. With no `browser`, launches one for this call and closes it too.
 */
export async function withPage<T>(
  fn: (page: Page, context: BrowserContext) => Promise<T>,
  browser?: Browser,
): Promise<T> {
  const target = browser ?? (await launchBrowser());
  try {
    const context = await target.newContext();
    try {
      const page = await context.newPage();
      return await fn(page, context);
    } finally {
      await context.close();
    }
  } finally {
    if (target !== browser) await target.close();
  }
}
