/**
 * The runner kits of one host: the kit (with the agent CLI's libraries) and the CLI's directory
 * for each agent runtime a project in an image that is not ours runs, made on first use and
 * shared by every launch after (concurrent launches wait for the same one).
 */
import { join } from "node:path";
import type { AgentRuntime } from "../../../protocol/agent-runtimes.js";
import { fetchAgentCli } from "../images/agent-cli.js";
import type { DroidBundles } from "../images/images.js";
import { type CliKit, ensureCliKit } from "./cli-kit.js";
import { ensureRunnerKit, type RunnerKit } from "./runner-kit.js";

export interface KitMounts {
  kit: RunnerKit;
  /** The agent CLI's directory (none for the scripted droid). */
  cli: CliKit | null;
}

export interface RunnerKitsOptions {
  /** `<data dir>/kits`. */
  dir: string;
  bundles: DroidBundles;
  /** The package cache the agent CLIs are fetched into. */
  cliCache: string;
  log: (line: string) => void;
}

export class RunnerKits {
  readonly #options: RunnerKitsOptions;
  readonly #made = new Map<AgentRuntime, Promise<KitMounts>>();

  constructor(options: RunnerKitsOptions) {
    this.#options = options;
  }

  /** What a container of `runtime` (default: the scripted droid) mounts. */
  mounts(runtime: AgentRuntime = "scripted"): Promise<KitMounts> {
    let made = this.#made.get(runtime);
    if (made === undefined) {
      made = this.#make(runtime);
      // A failure is not kept: the next launch tries again (a fetch may succeed then).
      made.catch(() => this.#made.delete(runtime));
      this.#made.set(runtime, made);
    }
    return made;
  }

  async #make(runtime: AgentRuntime): Promise<KitMounts> {
    const { dir, bundles, cliCache, log } = this.#options;
    if (runtime === "scripted") return { kit: await ensureRunnerKit({ dir, bundles, log }), cli: null };
    const files = await fetchAgentCli(runtime, log, cliCache);
    const kit = await ensureRunnerKit({ dir, bundles, linked: files.linked, log });
    return { kit, cli: ensureCliKit(join(dir, "agents"), files, log) };
  }
}
