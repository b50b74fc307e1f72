/**
 * Bundles the Node programs with esbuild:
 * - dist/container-client.mjs and dist/scripted-droid.mjs are self-contained (they go into the
 *   droid image, which has no node_modules);
 * - dist/host-agent.mjs bundles its npm packages and those two bundles with their maps (the one
 *   file a host needs beside Node and Docker), less the parts of dockerode's tree it never
 *   uses (ssh:// engines, BuildKit sessions and progress: ssh2, gRPC and protobufjs), which would
 *   cost it ~15 MiB of memory just by being loaded; a use of them fails with an error saying so.
 * The Worker is bundled by wrangler, not here.
 */
import { readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants as zlibConstants } from "node:zlib";
import { type BuildOptions, build, type Plugin } from "esbuild";
import { bundlesId } from "../host-agent/src/bundles/droid-bundles.js";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));
export const distDir = `${repoRoot}dist`;

export const bundles = {
  containerClient: `${distDir}/container-client.mjs`,
  scriptedDroid: `${distDir}/scripted-droid.mjs`,
  hostAgent: `${distDir}/host-agent.mjs`,
} as const;

/**
 * Keeps a bundle's text ASCII. V8 holds a script's source for as long as the script runs, in two
 * bytes a character when any character is outside Latin-1: one "—" left in a comment doubled the
 * host-agent's 3.9 MB source in its memory. esbuild escapes strings, regular expressions and
 * identifiers (charset "ascii") but copies comments as they are, so what is left is escaped here
 * as `\uXXXX`, which means the same character anywhere esbuild would have written it.
 */
const asciiSource: Plugin = {
  name: "ascii-source",
  setup(b) {
    b.onEnd(async (result) => {
      const outfile = b.initialOptions.outfile;
      if (result.errors.length > 0 || outfile === undefined) return;
      const text = await readFile(outfile, "utf8");
      const ascii = text.replace(
        /[\u0080-\uffff]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
      );
      if (ascii !== text) await writeFile(outfile, ascii);
    });
  },
};

/**
 * zod's error messages in English alone. Its `z` and `z.core` namespaces re-export every locale
 * it ships (`locales`, ~60 languages, more than half of zod's code in a bundle); the bundles use
 * none but English, which zod configures itself on load. `z.locales` holds `en` only.
 */
const englishZod: Plugin = {
  name: "english-zod",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)$/.test(args.resolveDir)
        ? { path: join(args.resolveDir, "..", "locales", "index.js"), namespace: "english-zod" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "english-zod" }, (args) => ({
      loader: "js",
      resolveDir: dirname(args.path),
      contents: `export { default as en } from "./en.js";`,
    }));
  },
};

const common: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  // V8 holds a script's whole source while it runs: without indentation and comments the
  // host-agent's is a third smaller. Names stay as written, so stack traces still read.
  minifyWhitespace: true,
  logLevel: "warning",
  charset: "ascii",
  plugins: [englishZod, asciiSource],
  // jsonc-parser's main build is UMD, whose require() of its own modules a bundle cannot follow.
  alias: { "jsonc-parser": "jsonc-parser/lib/esm/main.js" },
  // Some CommonJS dependencies call require(); give ESM bundles one.
  banner: {
    js: "import { createRequire as __oubCreateRequire } from 'node:module'; const require = __oubCreateRequire(import.meta.url);",
  },
};

/** Packages the host-agent never uses that its dependencies load; stubbed in its bundle. */
const UNUSED_BY_HOST_AGENT = ["ssh2", "@grpc/grpc-js", "@grpc/proto-loader", "protobufjs"];

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
      contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is not in the host-agent bundle: ssh:// Docker engines and BuildKit sessions and progress are not supported`)}); };
module.exports = new Proxy({}, { get: (_, key) => (key === "__esModule" ? undefined : new Proxy(fail, { construct: fail })) });`,
    }));
  },
};

/** Where the built host-agent's own file carries the container-side bundles: a comment at its end. */
const EMBEDDED_MARK = "/*oubliette-embedded-bundles ";

/**
 * Brotli at quality 9 with a 16 MiB window: the four files in 0.6 s and 1.15 MB, against quality 11's
 * 11 s and 1.05 MB (which made `npm start`'s build take 15 s instead of 3). The price is ~130 KB
 * more of base64 in the host-agent's source, which V8 holds while it runs.
 */
function brotliOptions(size: number) {
  return {
    params: {
      [zlibConstants.BROTLI_PARAM_QUALITY]: 9,
      [zlibConstants.BROTLI_PARAM_LGWIN]: 24,
      [zlibConstants.BROTLI_PARAM_SIZE_HINT]: size,
    },
  };
}

/**
 * The container-side bundles and their source maps, as the host-agent carries them: by name, each
 * brotli-compressed and base64-encoded (host-agent/src/bundles/embedded-bundles.ts).
 */
async function embeddedFiles(): Promise<Record<string, string>> {
  const paths = [bundles.containerClient, bundles.scriptedDroid].flatMap((path) => [path, `${path}.map`]);
  const files = await Promise.all(
    paths.map(async (path) => {
      const bytes = await readFile(path);
      return [basename(path), brotliCompressSync(bytes, brotliOptions(bytes.length)).toString("base64")];
    }),
  );
  return Object.fromEntries(files);
}

/**
 * Puts the container-side bundles into the host-agent's file (host-agent/src/bundles/
 * embedded-bundles.ts says there are none when run from source), so the built host-agent needs
 * nothing else of this repository. They are a comment at the file's end, which the host-agent
 * reads back the one time it writes them out: as string literals they would stay in its memory
 * beside its source (V8 keeps a function's constants with its bytecode) for as long as it runs.
 */
function embedBundles(files: Record<string, string>): Plugin {
  return {
    name: "embed-container-bundles",
    setup(b) {
      b.onLoad({ filter: /host-agent[\\/]src[\\/]bundles[\\/]embedded-bundles\.ts$/ }, () => ({
        loader: "js",
        contents: `import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
const MARK = ${JSON.stringify(EMBEDDED_MARK)};
export const EMBEDDED_BUNDLES = {
  id: ${JSON.stringify(bundlesId(files))},
  names: ${JSON.stringify(Object.keys(files))},
  async files() {
    const text = await readFile(fileURLToPath(import.meta.url), "utf8");
    const at = text.lastIndexOf(MARK);
    const end = text.lastIndexOf("*/");
    if (at < 0 || end < at) throw new Error("this host-agent file lost the bundles it carries at its end");
    return JSON.parse(text.slice(at + MARK.length, end));
  },
};`,
      }));
    },
  };
}

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
  const embedded = await embeddedFiles();
  await build({
    ...common,
    entryPoints: [`${repoRoot}host-agent/src/main.ts`],
    outfile,
    plugins: [leaveOut, englishZod, embedBundles(embedded), asciiSource],
    footer: { js: `${EMBEDDED_MARK}${JSON.stringify(embedded)}*/` },
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
