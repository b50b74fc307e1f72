/**
 * The project's own wrangler (node_modules, the version package.json pins), run with this Node:
 * the same program `npx wrangler` runs, without npx's lookup and warnings.
 */
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { WRANGLER_PACKAGE_JSON, wranglerBin, wranglerPackage } from "../stack/wrangler-bin.js";
import { DeployError } from "./errors.js";
import { listingFromFailure, parseSecretList, type SecretListing } from "./secret-listing.js";

/** wrangler's version, as the deploy checks compare it (automatic provisioning). */
export function wranglerVersion(): string {
  try {
    return wranglerPackage().version;
  } catch (err) {
    throw new DeployError(
      "wrangler_unavailable",
      `${WRANGLER_PACKAGE_JSON} names no version or program: ${(err as Error).message}`,
    );
  }
}

/** How long the secret listing may take: it is one API call, but a black-holed network never answers. */
const LIST_TIMEOUT_MS = 60_000;

/**
 * `wrangler secret list --format json` for the Worker the deploy targets (`selectors`: its
 * `--env`, `--name`, `--config`). stdin is not a terminal, so a signed-out wrangler fails with a
 * message instead of opening a browser to sign in mid-check.
 */
export async function listSecrets(cwd: string, selectors: readonly string[]): Promise<SecretListing> {
  const run = await runCaptured(cwd, ["secret", "list", "--format", "json", ...selectors], LIST_TIMEOUT_MS);
  if (run.timedOut)
    return {
      kind: "unavailable",
      cause: "offline",
      detail: `no answer in ${LIST_TIMEOUT_MS / 1000} s`,
    };
  if (run.code !== 0) return listingFromFailure(run.stderr);
  const names = parseSecretList(run.stdout);
  if (names === null)
    return {
      kind: "unavailable",
      cause: "failed",
      detail: "wrangler secret list did not answer a JSON list",
    };
  return { kind: "listed", names, workerExists: true };
}

interface Captured {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

function runCaptured(cwd: string, args: string[], timeoutMs: number): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wranglerBin(), ...args], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new DeployError("wrangler_unavailable", `could not run wrangler: ${err.message}`));
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

/**
 * `wrangler deploy <args>` on the terminal (it may ask to sign in or which account to use), and
 * its exit code; a signal counts as 128 + its number, as a shell reports it.
 */
export function runDeploy(cwd: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [wranglerBin(), "deploy", ...args], { cwd, stdio: "inherit" });
    // Ctrl-C reaches wrangler from the terminal by itself: this process outlives it to report its
    // exit. SIGTERM and SIGHUP sent to this process alone are passed on.
    const ignore = () => {};
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", ignore);
    process.on("SIGTERM", forward);
    process.on("SIGHUP", forward);
    const settle = () => {
      process.off("SIGINT", ignore);
      process.off("SIGTERM", forward);
      process.off("SIGHUP", forward);
    };
    child.once("error", (err) => {
      settle();
      reject(new DeployError("wrangler_unavailable", `could not run wrangler: ${err.message}`));
    });
    child.once("close", (code, signal) => {
      settle();
      if (code !== null) resolve(code);
      else resolve(128 + (signal ? constants.signals[signal] : 0));
    });
  });
}
