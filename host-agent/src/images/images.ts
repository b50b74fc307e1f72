/**
 * The local images droids run in, made without any registry:
 * - `oubliette/node-base:<node version>-<hash>`: this machine's Node binary and its libraries,
 *   tools, and the pinned npm and corepack (node-toolchain.ts), imported from a tarball (see
 *   rootfs.ts);
 * - `oubliette/droid:dev`: FROM that base, with the container-client and scripted-droid bundles;
 *   the agent images (agent-images.ts) are the same runner image FROM an agent CLI image.
 * Each is skipped when an image with the same content hash exists, so warm runs cost a few inspects.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type Dockerode from "dockerode";
import tar from "tar-stream";
import { isDockerNotFound } from "../runtime/errors.js";
import { asNodeStream, treeSize } from "./build-context.js";
import { DockerImageError } from "./errors.js";
import { fetchNodeToolchain } from "./node-toolchain.js";
import { PACKAGE_CACHE } from "./package-cache.js";
import { readProgress } from "./progress.js";
import { DROID_HOME, DROID_UID, packNodeRootfs, planNodeRootfs } from "./rootfs.js";

export { DockerImageError, type DockerImageErrorCode } from "./errors.js";

export const NODE_BASE_REPO = "oubliette/node-base";
const DROID_REPO = "oubliette/droid";
const DROID_TAG = "dev";
export const DROID_IMAGE_TAG = `${DROID_REPO}:${DROID_TAG}`;
export const CONTENT_HASH_LABEL = "oubliette.content-hash";
const IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin";

export interface DroidBundles {
  /** Path of dist/container-client.mjs (its .map is copied too when present). */
  containerClient: string;
  /** Path of dist/scripted-droid.mjs (its .map is copied too when present). */
  scriptedDroid: string;
}

/**
 * Imports the node base image unless it already exists, fetching its npm and corepack into
 * `cacheDir` (the package cache) only then; returns its tag.
 */
export async function ensureNodeBaseImage(
  docker: Dockerode,
  log: (line: string) => void,
  cacheDir: string = PACKAGE_CACHE,
): Promise<string> {
  const rootfs = await planNodeRootfs();
  const ref = `${NODE_BASE_REPO}:${rootfs.tag}`;
  if (await imageExists(docker, ref)) {
    log(`base image ${ref} present`);
    return ref;
  }
  const toolchain = await fetchNodeToolchain(log, cacheDir, rootfs.toolchain);
  const count = rootfs.files.length + toolchain.length;
  const megabytes = (treeSize(rootfs.files) + treeSize(toolchain)) / 1024 / 1024;
  log(
    `importing base image ${ref} (node, npm, corepack, sh and tools: ${count} entries, ${megabytes.toFixed(0)} MB)`,
  );
  const startedAt = Date.now();
  const stream = await docker.importImage(asNodeStream(packNodeRootfs(rootfs, toolchain)), {
    repo: NODE_BASE_REPO,
    tag: rootfs.tag,
    changes: [`ENV PATH=${IMAGE_PATH}`, "LABEL oubliette.image=node-base"],
  });
  const result = await readProgress(stream, log);
  if (result.error !== null) {
    throw new DockerImageError("base_image_failed", `importing ${ref} failed: ${result.error}`);
  }
  if (!(await imageExists(docker, ref))) {
    throw new DockerImageError(
      "base_image_failed",
      `the engine accepted the import of ${ref} but has no such image`,
    );
  }
  log(`base image ${ref} imported in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  return ref;
}

/** Builds `oubliette/droid:dev` FROM the base image with the two bundles unless an identical build exists; returns the tag. */
export async function ensureDroidImage(
  docker: Dockerode,
  bundles: DroidBundles,
  log: (line: string) => void,
  cacheDir: string = PACKAGE_CACHE,
): Promise<string> {
  const base = await ensureNodeBaseImage(docker, log, cacheDir);
  return ensureRunnerImage(docker, { repo: DROID_REPO, tag: DROID_TAG, kind: "droid", base }, bundles, log);
}

/** Where a runner image goes and what it is built FROM. */
export interface RunnerImageTarget {
  repo: string;
  tag: string;
  /** The `oubliette.image` label. */
  kind: string;
  /** A local image: the node base, or an agent CLI image built on it. */
  base: string;
  labels?: Record<string, string>;
}

/**
 * Builds `target` FROM its base with the bundles, the runner as CMD and the droid user, unless an
 * identical build exists; returns its tag. The base's image id is part of the content hash, so a
 * rebuilt base under the same tag still makes a new image.
 */
export async function ensureRunnerImage(
  docker: Dockerode,
  target: RunnerImageTarget,
  bundles: DroidBundles,
  log: (line: string) => void,
): Promise<string> {
  const files = contextFiles(bundles);
  const dockerfile = runnerDockerfile(target.base, [...files.keys()]);
  const baseId = (await docker.getImage(target.base).inspect()).Id;
  const hash = createHash("sha256").update(`${baseId}\0${dockerfile}\0${GIT_REMOTE_HELPER_SCRIPT}`);
  for (const [name, content] of files) hash.update(`\0${name}\0`).update(content);
  return ensureImage(
    docker,
    {
      ...target,
      contentHash: hash.digest("hex"),
      context: () => {
        const context = tar.pack();
        context.entry({ name: "Dockerfile" }, dockerfile);
        for (const [name, content] of files) context.entry({ name, mode: 0o644 }, content);
        context.entry({ name: GIT_REMOTE_HELPER_NAME, mode: 0o755 }, GIT_REMOTE_HELPER_SCRIPT);
        context.finalize();
        return context;
      },
    },
    log,
  );
}

/** An image ensureImage builds: where it goes, what makes it, and its context made on demand. */
export interface ImageBuild {
  repo: string;
  tag: string;
  /** The `oubliette.image` label. */
  kind: string;
  /** What the Dockerfile builds FROM (for the log). */
  base: string;
  /** Identifies every input; an image with this hash is reused, never rebuilt. */
  contentHash: string;
  /** The build context with its Dockerfile; called only when a build is needed. */
  context: () => tar.Pack | Promise<tar.Pack>;
  labels?: Record<string, string>;
}

/** Builds `build` unless an image with its content hash exists (re-tagged if needed); returns its tag. */
export async function ensureImage(
  docker: Dockerode,
  build: ImageBuild,
  log: (line: string) => void,
): Promise<string> {
  const ref = `${build.repo}:${build.tag}`;
  if (await reuseExisting(docker, build, log)) return ref;

  log(`building ${ref} FROM ${build.base} (content hash ${build.contentHash.slice(0, 12)})`);
  const startedAt = Date.now();
  const stream = await docker.buildImage(asNodeStream(await build.context()), {
    t: ref,
    labels: { ...build.labels, [CONTENT_HASH_LABEL]: build.contentHash, "oubliette.image": build.kind },
    rm: true,
    forcerm: true,
  });
  const result = await readProgress(stream, log);
  if (result.error !== null) {
    throw new DockerImageError("build_failed", `building ${ref} failed: ${result.error}`);
  }
  log(`built ${ref} in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  await pruneOldImages(docker, log);
  return ref;
}

/** Build-context files by their name in /opt/oubliette: the bundles and, when present, their source maps. */
function contextFiles(bundles: DroidBundles): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const wanted: [string, string][] = [
    ["container-client.mjs", bundles.containerClient],
    ["scripted-droid.mjs", bundles.scriptedDroid],
  ];
  for (const [name, path] of wanted) {
    if (!existsSync(path)) {
      throw new DockerImageError("bundle_missing", `${path} does not exist; run \`npm run build\` first`);
    }
    files.set(name, readFileSync(path));
    if (existsSync(`${path}.map`)) files.set(`${name}.map`, readFileSync(`${path}.map`));
  }
  return files;
}

/** git's helper for `oubliette::` remotes (container-client/src/git/remote-helper.ts), on PATH. */
const GIT_REMOTE_HELPER_NAME = "git-remote-oubliette";
const GIT_REMOTE_HELPER_SCRIPT = '#!/bin/sh\nexec node /opt/oubliette/container-client.mjs git-remote "$@"\n';

function runnerDockerfile(base: string, names: string[]): string {
  return [
    `FROM ${base}`,
    `COPY ${names.join(" ")} /opt/oubliette/`,
    `COPY ${GIT_REMOTE_HELPER_NAME} /usr/local/bin/`,
    // Source maps ship with the bundles so stack traces name the TypeScript lines.
    `ENV PATH=${IMAGE_PATH} NODE_OPTIONS=--enable-source-maps`,
    // The agent the runner starts (the scripted test droid); a host-agent may name another.
    `ENV OUBLIETTE_AGENT_COMMAND='["node","/opt/oubliette/scripted-droid.mjs"]'`,
    `USER ${DROID_UID}:${DROID_UID}`,
    `WORKDIR ${DROID_HOME}`,
    // The container's main process is the runner: it owns the agent's stdio, not the host-agent.
    `CMD ["node", "/opt/oubliette/container-client.mjs", "runner"]`,
    "",
  ].join("\n");
}

/** Reuses (re-tagging if needed) an image built from the same inputs; true when one exists. */
async function reuseExisting(docker: Dockerode, build: ImageBuild, log: (line: string) => void) {
  const ref = `${build.repo}:${build.tag}`;
  const label = `${CONTENT_HASH_LABEL}=${build.contentHash}`;
  const image = (await docker.listImages({ filters: { label: [label] } }))[0];
  if (image === undefined) return false;
  if (!(image.RepoTags ?? []).includes(ref)) {
    await docker.getImage(image.Id).tag({ repo: build.repo, tag: build.tag });
    log(`${ref} re-tagged to the existing build ${image.Id.slice(7, 19)}`);
  } else {
    log(`${ref} is up to date (content hash ${build.contentHash.slice(0, 12)}); not rebuilt`);
  }
  return true;
}

/** Removes earlier builds that lost their tag, so repeated builds do not pile up. */
async function pruneOldImages(docker: Dockerode, log: (line: string) => void): Promise<void> {
  const pruned = await docker.pruneImages({ filters: { dangling: ["true"], label: [CONTENT_HASH_LABEL] } });
  const count = pruned.ImagesDeleted?.filter((entry) => entry.Deleted !== undefined).length ?? 0;
  if (count > 0) log(`pruned ${count} old image layer(s)`);
}

/** True when the engine has an image by that reference. */
export async function imageExists(docker: Dockerode, ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch (error) {
    if (isDockerNotFound(error)) return false;
    throw error;
  }
}
