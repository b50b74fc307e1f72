/**
 * The project's own wrangler program (node_modules, the version package.json pins): its package
 * exports no subpath for it, so it is found beside its package.json, where its `bin` names it.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { z } from "zod";

const require = createRequire(import.meta.url);

/** wrangler's package.json. */
export const WRANGLER_PACKAGE_JSON = require.resolve("wrangler/package.json");

const WranglerPackage = z.object({
  version: z.string(),
  bin: z.object({ wrangler: z.string() }),
});

/** wrangler's package.json, read once: its version and program. */
export function wranglerPackage(): z.infer<typeof WranglerPackage> {
  return WranglerPackage.parse(JSON.parse(readFileSync(WRANGLER_PACKAGE_JSON, "utf8")));
}

/** The file `npx wrangler` runs. */
export function wranglerBin(): string {
  return join(dirname(WRANGLER_PACKAGE_JSON), wranglerPackage().bin.wrangler);
}
