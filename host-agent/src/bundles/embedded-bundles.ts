/**
 * The container-side programs inside the built host-agent. From source this module says there
 * are none (the bundles are in dist/, see droid-bundles.ts); `npm run build` replaces it in the
 * host-agent bundle with their files (scripts/build.ts), so the built file needs nothing else.
 */

/**
 * Files by name, each brotli-compressed and base64-encoded (the host-agent's own source stays in
 * its memory for as long as it runs): `container-client.mjs` (the runner and the droid's MCP
 * server, in every image), `scripted-droid.mjs` (the scripted test droid, the droid image's
 * default agent), and their source maps.
 */
export type EmbeddedBundles = Readonly<Record<string, string>>;

export const EMBEDDED_BUNDLES: EmbeddedBundles | null = null;
