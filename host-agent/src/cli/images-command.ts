/**
 * `host-agent images`: builds the images this host's sessions run in, as the test setup does,
 * with no registry: the node base (this machine's Node and the libraries it needs, imported), the
 * droid image FROM it with the container-side bundles this host-agent carries, and the image of
 * each agent CLI asked for (the CLIs, and the base's npm and corepack, fetched from the npm
 * registry, cached under the data directory). An image whose inputs have not changed is kept, so
 * running it again is cheap.
 */
import { type Command, Option } from "commander";
import Dockerode from "dockerode";
import { agentCliCache, droidBundles, hostAgentFile } from "../bundles/droid-bundles.js";
import { CLI_RUNTIME_NAMES, type CliRuntimeName } from "../images/agent-cli.js";
import { ensureAgentImages } from "../images/agent-images.js";
import { ensureHostAgentImage } from "../images/host-image.js";
import { ensureDroidImage } from "../images/images.js";
import { dockerSocketPath, pingDocker } from "../runtime/docker-ping.js";
import { pullImage } from "../runtime/image-pull.js";
import { HOST_AGENT_VERSION } from "../version.js";
import { CliError } from "./errors.js";

export interface ImagesOptions {
  agents: CliRuntimeName[];
  /** Images projects name, pulled from their registries (an air-gapped host loads them instead). */
  pull?: string[];
  /** Also the host-agent's own image (to run it in a container instead of as a service). */
  hostImage?: boolean;
  dataDir: string;
  dockerSocket?: string;
  log: (line: string) => void;
}

/** The agent runtimes `value` names (comma-separated; `all`, or `none`). */
export function parseAgents(value: string): CliRuntimeName[] {
  const trimmed = value.trim();
  if (trimmed === "all") return CLI_RUNTIME_NAMES;
  if (trimmed === "none" || trimmed === "") return [];
  const names = trimmed.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(CLI_RUNTIME_NAMES as string[]).includes(name));
  if (unknown.length > 0)
    throw new CliError(
      "invalid_option",
      `--agents names no such runtime: ${unknown.join(", ")} (known: ${CLI_RUNTIME_NAMES.join(", ")}, all, none)`,
    );
  return CLI_RUNTIME_NAMES.filter((name) => names.includes(name));
}

/** Builds the droid image and the agents' images; returns their tags by runtime. */
export async function buildImages(options: ImagesOptions): Promise<Record<string, string>> {
  const socketPath = options.dockerSocket ?? dockerSocketPath();
  if (socketPath === null || !(await pingDocker(socketPath, 5_000)))
    throw new CliError(
      "docker_unreachable",
      `no Docker Engine answers on ${socketPath ?? process.env.DOCKER_HOST}: start it (systemctl start docker) or name its socket with --docker-socket`,
    );
  const docker = new Dockerode({ socketPath });
  const bundles = await droidBundles(options.dataDir);
  // The agent CLIs and the base image's npm and corepack.
  const cache = agentCliCache(options.dataDir);
  const droid = await ensureDroidImage(docker, bundles, options.log, cache);
  const agents = await ensureAgentImages(docker, bundles, options.agents, options.log, cache);
  const tags: Record<string, string> = { scripted: droid };
  for (const [runtime, tag] of Object.entries(agents)) if (tag !== undefined) tags[runtime] = tag;
  for (const ref of options.pull ?? []) {
    options.log(`pulling ${ref}`);
    await pullImage(docker, ref, options.log).catch((error: Error) => {
      throw new CliError("pull_failed", error.message);
    });
    tags[ref] = (await docker.getImage(ref).inspect()).Id;
  }
  if (options.hostImage)
    tags["host-agent"] = await ensureHostAgentImage(
      docker,
      hostAgentFile(),
      HOST_AGENT_VERSION,
      options.log,
      cache,
    );
  return tags;
}

/** Adds `images` to the program. */
export function imagesCommand(program: Command, defaultDataDir: () => string): Command {
  return program
    .command("images")
    .description("build the images sessions run in: the droid image and the agent CLIs' (no registry needed)")
    .addOption(
      new Option(
        "--agents <list>",
        `agent CLIs to build images for: comma-separated (${CLI_RUNTIME_NAMES.join(", ")}), all, or none`,
      ).default("all"),
    )
    .addOption(
      new Option(
        "--pull <images>",
        "also pull these images (comma-separated) that projects name, from their registries; a host that reaches none loads them with docker load",
      ),
    )
    .addOption(
      new Option(
        "--host-image",
        "also the host-agent's own image, oubliette/host-agent:<version>, to run it in a container",
      ),
    )
    .addOption(
      new Option("--data-dir <dir>", "the host-agent's data directory (the CLI cache goes under it)").env(
        "OUBLIETTE_DATA_DIR",
      ),
    )
    .addOption(
      new Option(
        "--docker-socket <path>",
        "the Docker Engine's socket (default: DOCKER_HOST or /var/run/docker.sock)",
      ),
    )
    .action(
      async (flags: {
        agents: string;
        pull?: string;
        hostImage?: boolean;
        dataDir?: string;
        dockerSocket?: string;
      }) => {
        const log = (line: string) => process.stderr.write(`${line}\n`);
        const tags = await buildImages({
          agents: parseAgents(flags.agents),
          pull: (flags.pull ?? "")
            .split(",")
            .map((ref) => ref.trim())
            .filter((ref) => ref !== ""),
          hostImage: flags.hostImage === true,
          dataDir: flags.dataDir ?? defaultDataDir(),
          ...(flags.dockerSocket === undefined ? {} : { dockerSocket: flags.dockerSocket }),
          log,
        });
        // What was built, as JSON on stdout (the log went to stderr).
        process.stdout.write(`${JSON.stringify({ images: tags })}\n`);
      },
    );
}
