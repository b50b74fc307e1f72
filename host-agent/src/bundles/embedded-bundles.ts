/**
 * The container-side programs inside the built host-agent. From source this module says there
 * are none (the bundles are in dist/, see droid-bundles.ts); `npm run build` replaces it in the
 * host-agent bundle with their files (scripts/build.ts), so the built file needs nothing else.
 */

/**
 * The files by name, each brotli-compressed and base64-encoded: `container-client.mjs` (the
 * runner and the droid's MCP server, in every image), `scripted-droid.mjs` (the scripted test
 * droid, the droid image's default agent), and their source maps. `id` names their content
 * (bundlesId, computed when built), `names` their names; `files()` reads them from the end of the
 * built file, only when called: a host that already wrote them never does, and one that does
 * holds their strings only while it writes them.
 */
export interface EmbeddedBundles {
  readonly id: string;
  readonly names: readonly string[];
  files(): Promise<Readonly<Record<string, string>>>;
}

export const EMBEDDED_BUNDLES: EmbeddedBundles | null = null;
