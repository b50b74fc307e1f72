/**
 * Builds the console's static assets into worker/console/dist (the Worker's `[assets]` directory,
 * not committed): the client bundled by esbuild from worker/console/client/main.ts to
 * `/console/app.js` (one ES module, minified, no CDN, no runtime dependency), its stylesheet, and
 * the `_headers` file giving those responses their security headers. wrangler runs this before
 * `wrangler dev` and `wrangler deploy` (`[build]` in wrangler.toml); the test configuration runs it
 * too, since the in-workerd tests read the same assets directory.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
export const CONSOLE_DIST = `${root}worker/console/dist`;

const HEADERS = `/console/*
  X-Content-Type-Options: nosniff
  Cache-Control: no-cache
  Cross-Origin-Resource-Policy: same-origin
`;

/**
 * Builds in memory and writes a file only when its content changed, each through a rename: several
 * Worker servers (the tests run two at once) run this build while others serve the same
 * directory, and must never see a file missing or half written.
 */
export function buildConsole(): void {
  mkdirSync(`${CONSOLE_DIST}/console`, { recursive: true });
  const built = buildSync({
    entryPoints: [`${root}worker/console/client/main.ts`],
    outfile: `${CONSOLE_DIST}/console/app.js`,
    bundle: true,
    format: "esm",
    target: "es2022",
    platform: "browser",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    write: false,
  });
  for (const file of built.outputFiles) replace(file.path, file.text);
  replace(
    `${CONSOLE_DIST}/console/console.css`,
    readFileSync(`${root}worker/console/public/console.css`, "utf8"),
  );
  replace(`${CONSOLE_DIST}/_headers`, HEADERS);
}

function replace(path: string, content: string): void {
  if (existsSync(path) && readFileSync(path, "utf8") === content) return;
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildConsole();
