/**
 * Makes a real Chromium available for browser tests: Debian's `chromium` package at
 * /usr/bin/chromium, driven by playwright-core (which never downloads a browser here). Use the one
 * that is installed and runs; otherwise, as root on Debian, install it with apt-get. A failure is
 * thrown as ChromiumUnavailableError, never swallowed: a browser test run must not pass without a
 * browser.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { DockerUnavailableError } from "../../host-agent/src/images/errors.js";
import { runApt } from "../docker/apt.js";

/** Where Debian's `chromium` package puts the browser (a wrapper script around /usr/lib/chromium). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** The only flags Chromium is launched with on these machines (see shared ENVIRONMENT.md). */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
] as const;

const INSTALL_ARGS = ["install", "-y", "--no-install-recommends", "chromium"];
const VERSION_TIMEOUT_MS = 30_000;
const HOW_TO_INSTALL = `install Debian's chromium yourself (as root: apt-get update && apt-get install -y --no-install-recommends chromium) so that ${CHROMIUM_PATH} exists`;

export type ChromiumUnavailableCode =
  /** /usr/bin/chromium is missing and this process is not root, so it cannot install it. */
  | "not_root"
  /** /usr/bin/chromium is missing and there is no apt-get to install it with. */
  | "not_debian"
  /** apt-get failed (even after `apt-get update`), or installed the package but no browser runs. */
  | "apt_failed"
  /** /usr/bin/chromium exists but `chromium --version` fails. */
  | "broken";

/** No usable Chromium could be found or installed; the message says why and what to do. */
export class ChromiumUnavailableError extends Error {
  override readonly name = "ChromiumUnavailableError";
  readonly code: ChromiumUnavailableCode;

  constructor(code: ChromiumUnavailableCode, message: string, options?: { cause?: unknown }) {
    super(`Chromium unavailable (${code}): ${message}`, options);
    this.code = code;
  }
}

/**
 * Returns the path of a Chromium that runs (always CHROMIUM_PATH), installing Debian's package
 * when it is missing and this is root on Debian. Logs progress lines for a human.
 */
export async function ensureChromium(log: (line: string) => void): Promise<string> {
  if (existsSync(CHROMIUM_PATH)) {
    const version = await chromiumVersion(CHROMIUM_PATH);
    if (!version.ok) {
      throw new ChromiumUnavailableError(
        "broken",
        `${CHROMIUM_PATH} --version failed (${version.output}); reinstall it (as root: apt-get install -y --reinstall --no-install-recommends chromium)`,
      );
    }
    log(`using ${CHROMIUM_PATH} (${version.output})`);
    return CHROMIUM_PATH;
  }
  if (process.getuid?.() !== 0) {
    throw new ChromiumUnavailableError(
      "not_root",
      `${CHROMIUM_PATH} not found and this process is not root, so it cannot install it: ${HOW_TO_INSTALL}`,
    );
  }
  if (findOnPath("apt-get") === null) {
    throw new ChromiumUnavailableError(
      "not_debian",
      `${CHROMIUM_PATH} not found and there is no apt-get to install it with (automatic install only works on Debian): ${HOW_TO_INSTALL}`,
    );
  }
  const startedAt = Date.now();
  log(`${CHROMIUM_PATH} not found: installing Debian's chromium with apt-get (10 s to a minute)`);
  await installChromium(log);
  const version = existsSync(CHROMIUM_PATH) ? await chromiumVersion(CHROMIUM_PATH) : null;
  if (version === null || !version.ok) {
    throw new ChromiumUnavailableError(
      "apt_failed",
      `apt-get installed chromium but ${CHROMIUM_PATH} ${version === null ? "is still missing" : `does not run (${version.output})`}`,
    );
  }
  log(`installed ${version.output} in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  return CHROMIUM_PATH;
}

/**
 * `apt-get install`; only when that fails (package lists missing, as on a fresh machine, or stale,
 * so a .deb is gone from the mirror) `apt-get update` and one more try.
 */
async function installChromium(log: (line: string) => void): Promise<void> {
  try {
    await runApt(INSTALL_ARGS, log);
    return;
  } catch (error) {
    if (!(error instanceof DockerUnavailableError)) throw error;
    log("apt-get install failed: the package lists may be missing or stale; running apt-get update");
  }
  try {
    await runApt(["update"], log);
    await runApt(INSTALL_ARGS, log);
  } catch (error) {
    if (!(error instanceof DockerUnavailableError)) throw error;
    // runApt (shared with the Docker tooling) throws Docker's error type; say it as ours.
    const detail = error.message.replace(/^Docker Engine unavailable \(apt_failed\): /, "");
    throw new ChromiumUnavailableError("apt_failed", `${detail}\nOr ${HOW_TO_INSTALL}.`, { cause: error });
  }
}

/** Runs `<path> --version`: ok with its trimmed output, or not ok with the reason. */
function chromiumVersion(path: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(path, ["--version"], { timeout: VERSION_TIMEOUT_MS }, (error, stdout, stderr) => {
      // Debian's wrapper may warn on stderr (its /etc/chromium.d/dev-shm check does on some
      // machines) even when the browser is fine: stderr only matters on failure.
      if (error) {
        const said = `${stdout}${stderr}`.trim().split("\n").slice(-5).join(" | ");
        resolve({ ok: false, output: `${error.message.trim()}${said ? `: ${said}` : ""}` });
      } else {
        resolve({ ok: true, output: stdout.trim() });
      }
    });
  });
}

function findOnPath(command: string): string | null {
  // Root's PATH usually has the sbin dirs, but CI shells sometimes do not.
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
