/**
 * Bundles the Node programs with esbuild:
 * - dist/container-client.mjs and dist/scripted-droid.mjs are self-contained (they go into the
 *   droid image, which has no node_modules);
 * - dist/host-agent.mjs keeps its npm packages external (it runs beside node_modules).
 * The Worker is bundled by wrangler, not here.
 */
import { fileURLToPath } from "node:url";
import { type BuildOptions, build } from "esbuild";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));
export const distDir = `${repoRoot}dist`;

export const bundles = {
  containerClient: `${distDir}/container-client.mjs`,
  scriptedDroid: `${distDir}/scripted-droid.mjs`,
  hostAgent: `${distDir}/host-agent.mjs`,
} as const;

const common: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  logLevel: "warning",
  // Some CommonJS dependencies call require(); give ESM bundles one.
  banner: {
    js: "import { createRequire as __oubCreateRequire } from 'node:module'; const require = __oubCreateRequire(import.meta.url);",
  },
};

/** Builds every bundle; returns their paths. */
export async function buildAll(): Promise<typeof bundles> {
  await Promise.all([
    build({
      ...common,
      entryPoints: [`${repoRoot}container-client/src/main.ts`],
      outfile: bundles.containerClient,
    }),
    build({
      ...common,
      entryPoints: [`${repoRoot}test/fixtures/scripted-droid/main.ts`],
      outfile: bundles.scriptedDroid,
    }),
    build({
      ...common,
      entryPoints: [`${repoRoot}host-agent/src/main.ts`],
      outfile: bundles.hostAgent,
      packages: "external",
    }),
  ]);
  return bundles;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildAll();
  process.stdout.write(`built ${Object.values(bundles).join(", ")}\n`);
}
