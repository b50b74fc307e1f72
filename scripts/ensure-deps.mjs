// Installs the npm dependencies when they are missing or older than the lockfile, so that
// `npm start` and `npm test` work on a fresh clone. Plain JS: it runs before anything is installed.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const marker = `${root}node_modules/.package-lock.json`;
const lock = `${root}package-lock.json`;

const stale = !existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs;
if (stale) {
  // `npm ci` installs exactly the committed lockfile (the deploy path uses it too).
  process.stderr.write("oubliette: installing npm dependencies (npm ci, from package-lock.json)...\n");
  const r = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  if (r.status !== 0) {
    process.stderr.write("oubliette: npm ci failed; see the output above\n");
    process.exit(r.status ?? 1);
  }
}
