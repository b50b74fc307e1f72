/**
 * Bundles the Node programs with esbuild:
 * - dist/container-client.mjs and dist/scripted-droid.mjs are self-contained (they go into the
 *   droid image, which has no node_modules);
 * - dist/host-agent.mjs bundles its npm packages and those two bundles with their maps (the one
 *   file a host needs beside Node and Docker), less the parts of dockerode's tree it never
 *   uses (ssh:// engines, BuildKit sessions: ssh2 and gRPC), which would cost it ~15 MiB of
 *   memory just by being loaded; a use of them fails with an error saying so.
 * The Worker is bundled by wrangler, not here.
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync } from "node:zlib";
import { type BuildOptions, build, type Plugin } from "esbuild";
import { bundlesId } from "../host-agent/src/bundles/droid-bundles.js";

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

/** Packages the host-agent never uses that its dependencies load; stubbed in its bundle. */
const UNUSED_BY_HOST_AGENT = ["ssh2", "@grpc/grpc-js", "@grpc/proto-loader"];

/**
 * Resolves each unused package to a stub whose every export is a function that throws when
 * called or constructed (dependencies read them at load time, and only use them on paths the
 * host-agent never takes).
 */
const leaveOut: Plugin = {
  name: "leave-out-unused",
  setup(b) {
    const filter = new RegExp(
      `^(${UNUSED_BY_HOST_AGENT.map((p) => p.replace(/[/@.-]/g, "\\$&")).join("|")})$`,
    );
    b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "left-out" }));
    b.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      loader: "js",
      contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is not in the host-agent bundle: ssh:// Docker engines and BuildKit sessions are not supported`)}); };
module.exports = new Proxy({}, { get: (_, key) => (key === "__esModule" ? undefined : new Proxy(fail, { construct: fail })) });`,
    }));
  },
};

/**
 * Puts the container-side bundles and their source maps into the host-agent's (host-agent/src/
 * bundles/embedded-bundles.ts says there are none when run from source), so the built host-agent
 * needs nothing else of this repository. Compressed: the host-agent's own source stays in its
 * memory for as long as it runs.
 */
const embedBundles: Plugin = {
  name: "embed-container-bundles",
  setup(b) {
    b.onLoad({ filter: /host-agent[\\/]src[\\/]bundles[\\/]embedded-bundles\.ts$/ }, async () => {
      const paths = [bundles.containerClient, bundles.scriptedDroid].flatMap((path) => [path, `${path}.map`]);
      const files = await Promise.all(
        paths.map(async (path) => [
          basename(path),
          brotliCompressSync(await readFile(path)).toString("base64"),
        ]),
      );
      const byName = Object.fromEntries(files);
      // The strings are made only when files() runs (a host writing them for the first time).
      return {
        loader: "js",
        contents: `export const EMBEDDED_BUNDLES = { id: ${JSON.stringify(bundlesId(byName))}, names: ${JSON.stringify(Object.keys(byName))}, files() { return ${JSON.stringify(byName)}; } };`,
      };
    });
  },
};

/** The repository's version, which the host-agent reports (host-agent/src/version.ts). */
async function packageVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(`${repoRoot}package.json`, "utf8")) as { version: string };
  return pkg.version;
}

/** Builds every bundle (the host-agent's last: it carries the others); returns their paths. */
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
  ]);
  await buildHostAgent();
  return bundles;
}

/**
 * Builds the host-agent file (from the container-side bundles already in dist/): to `outfile`,
 * reporting `version` (default: dist/host-agent.mjs, the repository's version). A test builds an
 * "upgrade" with another version beside the usual one.
 */
export async function buildHostAgent(options: { outfile?: string; version?: string } = {}): Promise<string> {
  const outfile = options.outfile ?? bundles.hostAgent;
  await build({
    ...common,
    entryPoints: [`${repoRoot}host-agent/src/main.ts`],
    outfile,
    plugins: [leaveOut, embedBundles],
    define: { __OUBLIETTE_VERSION__: JSON.stringify(options.version ?? (await packageVersion())) },
    // ws loads these native speed-ups when present; it works without them.
    external: ["bufferutil", "utf-8-validate"],
  });
  return outfile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildAll();
  process.stdout.write(`built ${Object.values(bundles).join(", ")}\n`);
}
