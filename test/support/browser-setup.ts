/**
 * vitest globalSetup for tests that drive a real browser: makes Debian's Chromium available
 * (installing it on a bare root Debian machine) and provides its path to the tests
 * (`inject("chromiumPath")`, used by test/support/browser.ts). If no Chromium can be had the whole
 * run fails, loudly: a browser test that silently skips proves nothing.
 */
import type { TestProject } from "vitest/node";
import { ensureChromium } from "../../scripts/browser/ensure-chromium.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Path of the Chromium executable the browser tests launch (Debian's /usr/bin/chromium). */
    chromiumPath: string;
  }
}

const log = (line: string) => process.stderr.write(`[browser-setup] ${line}\n`);

export default async function setup(project: TestProject): Promise<void> {
  project.provide("chromiumPath", await ensureChromium(log));
}
