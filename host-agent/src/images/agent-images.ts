/**
 * One image per agent runtime, in two layers so that a bundle change never copies a CLI again:
 * - `oubliette/agent-cli-<runtime>:<version>`: FROM node-base, the pinned CLI under
 *   /opt/agents/<runtime>/ plus the shared libraries it needs that node lacks; rebuilt only when
 *   the pin, the layout or the base changes;
 * - `oubliette/agent-<runtime>:dev`: FROM that, the runner image (bundles, CMD, droid user) that
 *   `oubliette/droid:dev` is FROM node-base.
 * `scripted` needs no CLI: its image is `oubliette/droid:dev`.
 */
import { createHash } from "node:crypto";
import type Dockerode from "dockerode";
import {
  AGENT_IMAGE_TAG,
  type AgentRuntime,
  agentImageRepo,
  CLI_RUNTIMES,
} from "../../../protocol/agent-runtimes.js";
import { dockerStatusCode } from "../runtime/errors.js";
import { type AgentCliFiles, type CliRuntimeName, cliLayoutKey, fetchAgentCli } from "./agent-cli.js";
import { hostFile, packStream, packTree, type TreeEntry, treeSize } from "./build-context.js";
import { DockerImageError } from "./errors.js";
import {
  DROID_IMAGE_TAG,
  type DroidBundles,
  ensureDroidImage,
  ensureImage,
  ensureNodeBaseImage,
  ensureRunnerImage,
} from "./images.js";
import { PACKAGE_CACHE } from "./package-cache.js";
import { planNodeRootfs, sharedLibraries } from "./rootfs.js";

/** Bump when what goes into an agent CLI image changes in a way the layout key does not show. */
const CLI_IMAGE_VERSION = 1;
const RUNTIME_LABEL = "oubliette.agent-runtime";

/** The tag of the image a session of `runtime` runs in. */
export function agentImageTag(runtime: AgentRuntime): string {
  return runtime === "scripted" ? DROID_IMAGE_TAG : `${agentImageRepo(runtime)}:${AGENT_IMAGE_TAG}`;
}

/** The tag of the image holding the runtime's pinned CLI (the agent image's base). */
export function agentCliImageTag(runtime: CliRuntimeName): string {
  return `${agentCliRepo(runtime)}:${CLI_RUNTIMES[runtime].version}`;
}

/** Builds (or finds up to date) the image of each runtime, one after another; returns their tags. */
export async function ensureAgentImages(
  docker: Dockerode,
  bundles: DroidBundles,
  runtimes: readonly AgentRuntime[],
  log: (line: string) => void,
  cliCache: string = PACKAGE_CACHE,
): Promise<Partial<Record<AgentRuntime, string>>> {
  const tags: Partial<Record<AgentRuntime, string>> = {};
  for (const runtime of runtimes) {
    const startedAt = Date.now();
    tags[runtime] =
      runtime === "scripted"
        ? await ensureDroidImage(docker, bundles, log, cliCache)
        : await ensureAgentImage(docker, bundles, runtime, log, cliCache);
    log(`${runtime}: ${tags[runtime]} ready after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  }
  return tags;
}

/** Builds `oubliette/agent-<runtime>:dev` (and the CLI image under it) unless up to date; returns its tag. */
export async function ensureAgentImage(
  docker: Dockerode,
  bundles: DroidBundles,
  runtime: CliRuntimeName,
  log: (line: string) => void,
  cliCache: string = PACKAGE_CACHE,
): Promise<string> {
  const base = await ensureAgentCliImage(docker, runtime, log, cliCache);
  const tag = await ensureRunnerImage(
    docker,
    {
      repo: agentImageRepo(runtime),
      tag: AGENT_IMAGE_TAG,
      kind: "agent",
      base,
      labels: { [RUNTIME_LABEL]: runtime },
    },
    bundles,
    log,
  );
  // Only now: until the agent image is rebuilt, an older CLI image is still its base.
  await removeOtherVersions(docker, runtime, log);
  return tag;
}

/** Builds `oubliette/agent-cli-<runtime>:<version>` unless up to date, fetching the CLI only then; returns its tag. */
export async function ensureAgentCliImage(
  docker: Dockerode,
  runtime: CliRuntimeName,
  log: (line: string) => void,
  cliCache: string = PACKAGE_CACHE,
): Promise<string> {
  const base = await ensureNodeBaseImage(docker, log, cliCache);
  await checkNeeds(runtime);
  const baseId = (await docker.getImage(base).inspect()).Id;
  const contentHash = createHash("sha256")
    .update(`agent-cli ${CLI_IMAGE_VERSION}\0${baseId}\0${cliLayoutKey(runtime)}`)
    .digest("hex");
  const { version } = CLI_RUNTIMES[runtime];
  return ensureImage(
    docker,
    {
      repo: agentCliRepo(runtime),
      tag: version,
      kind: "agent-cli",
      base,
      contentHash,
      labels: { [RUNTIME_LABEL]: runtime, "oubliette.agent-version": version },
      context: async () => {
        const cli = await fetchAgentCli(runtime, log, cliCache);
        const libraries = await missingLibraries(cli);
        const megabytes = (treeSize(cli.entries) + treeSize(libraries)) / 1024 / 1024;
        const added = libraries.map((lib) => lib.path).join(", ") || "none";
        log(
          `sending ${megabytes.toFixed(0)} MB of ${runtime} files to the engine (libraries added: ${added})`,
        );
        return packStream(async (pack) => {
          pack.entry({ name: "Dockerfile" }, `FROM ${base}\nCOPY rootfs/ /\n`);
          await packTree(pack, "rootfs", [...cli.entries, ...libraries]);
        });
      },
    },
    log,
  );
}

/**
 * Throws unless the base image holds every program the CLI needs (CLI_RUNTIMES' `needs`): the
 * base copies them from this machine only when it has them, and a CLI image without them would
 * build and then fail in use (Droid exits on its first shell command without bash).
 */
async function checkNeeds(runtime: CliRuntimeName): Promise<void> {
  const needs = CLI_RUNTIMES[runtime].needs ?? [];
  if (needs.length === 0) return;
  const inBase = new Set((await planNodeRootfs()).files.map((file) => file.path));
  const missing = needs.filter((name) => !inBase.has(`/usr/bin/${name}`) && !inBase.has(`/bin/${name}`));
  if (missing.length > 0) {
    throw new DockerImageError(
      "base_image_failed",
      `the ${runtime} CLI needs ${missing.join(" and ")}, which this machine does not have to copy into ` +
        "the base image: install them (Debian: apt-get install bash procps) and build again",
    );
  }
}

/** Host libraries the CLI's linked files load that the node base image does not have. */
async function missingLibraries(cli: AgentCliFiles): Promise<TreeEntry[]> {
  const inBase = new Set((await planNodeRootfs()).files.map((file) => file.path));
  const wanted = new Set<string>();
  for (const linked of cli.linked) {
    for (const lib of await sharedLibraries(linked)) if (!inBase.has(lib)) wanted.add(lib);
  }
  return [...wanted].sort().map((lib) => hostFile(lib, lib));
}

/** Untags the runtime's CLI images of other versions; the engine deletes them unless a container uses them. */
async function removeOtherVersions(docker: Dockerode, runtime: CliRuntimeName, log: (line: string) => void) {
  const current = agentCliImageTag(runtime);
  const images = await docker.listImages({ filters: { reference: [`${agentCliRepo(runtime)}:*`] } });
  for (const tag of images.flatMap((image) => image.RepoTags ?? []).filter((tag) => tag !== current)) {
    try {
      await docker.getImage(tag).remove();
      log(`removed ${tag}: the pin is now ${CLI_RUNTIMES[runtime].version}`);
    } catch (error) {
      if (dockerStatusCode(error) !== 409) throw error;
      log(`kept ${tag}: a container still uses it`);
    }
  }
}

function agentCliRepo(runtime: CliRuntimeName): string {
  return `oubliette/agent-cli-${runtime}`;
}
