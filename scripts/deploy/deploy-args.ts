/**
 * `npm run deploy`'s command line. Its own flags are `--dry-run` (also handed to wrangler) and
 * `--skip-checks`; every other argument, and everything after a `--`, goes to `wrangler deploy`
 * unchanged. The wrangler flags that change what a deploy needs (`--env`, `--name`, `--config`,
 * `--var`, `--no-x-provision`) are read here too, as wrangler reads them, so the checks look at
 * what will actually be deployed.
 */
import { DeployError } from "./errors.js";

export interface DeployArgs {
  dryRun: boolean;
  skipChecks: boolean;
  /** The arguments after `wrangler deploy`. */
  wranglerArgs: string[];
  envName?: string;
  name?: string;
  /** `--config`/`-c`: another wrangler config file than ./wrangler.toml. */
  configPath?: string;
  /** `--var KEY:VALUE`, split at the first colon (wrangler's rule; a value may be a URL). */
  varOverrides: Record<string, string>;
  provisioningDisabled: boolean;
}

const PROVISION_OFF = new Set([
  "--no-x-provision",
  "--no-experimental-provision",
  "--x-provision=false",
  "--experimental-provision=false",
]);

export function parseDeployArgs(argv: readonly string[]): DeployArgs {
  const separator = argv.indexOf("--");
  const own = separator < 0 ? argv : argv.slice(0, separator);
  const rest = separator < 0 ? [] : argv.slice(separator + 1);
  const skipChecks = own.includes("--skip-checks");
  const wranglerArgs = [...own.filter((a) => a !== "--skip-checks"), ...rest];
  const args: DeployArgs = {
    dryRun: wranglerArgs.includes("--dry-run"),
    skipChecks,
    wranglerArgs,
    varOverrides: {},
    provisioningDisabled: false,
  };
  for (let i = 0; i < wranglerArgs.length; i++) {
    const arg = wranglerArgs[i] ?? "";
    const [flag = "", inline] = splitInline(arg);
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = wranglerArgs[i + 1];
      if (next === undefined || next.startsWith("-"))
        throw new DeployError("bad_arguments", `${flag} needs a value`);
      i++;
      return next;
    };
    if (PROVISION_OFF.has(arg)) args.provisioningDisabled = true;
    else if (flag === "--env" || flag === "-e") args.envName = value();
    else if (flag === "--name") args.name = value();
    else if (flag === "--config" || flag === "-c") args.configPath = value();
    else if (flag === "--var") {
      // yargs reads `--var A:1 B:2` as an array: every following argument up to the next flag.
      addVar(args.varOverrides, value());
      while (inline === undefined && i + 1 < wranglerArgs.length && !wranglerArgs[i + 1]?.startsWith("-")) {
        i++;
        addVar(args.varOverrides, wranglerArgs[i] ?? "");
      }
    }
  }
  return args;
}

/** `--flag=value` as [flag, value]; anything else as [arg]. */
function splitInline(arg: string): [string, string?] {
  const eq = arg.indexOf("=");
  return arg.startsWith("-") && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg];
}

function addVar(vars: Record<string, string>, pair: string): void {
  const colon = pair.indexOf(":");
  if (colon <= 0) throw new DeployError("bad_arguments", `--var ${pair}: expected KEY:VALUE`);
  vars[pair.slice(0, colon)] = pair.slice(colon + 1);
}
