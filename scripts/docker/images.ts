/**
 * The two local images droids run in, made without any registry:
 * - `oubliette/node-base:<node version>-<hash>`: this machine's Node binary and its libraries,
 *   imported from a tarball (see rootfs.ts);
 * - `oubliette/droid:dev`: FROM that base, with the container-client and scripted-droid bundles.
 * Both are skipped when an identical image already exists, so warm runs cost a few inspects.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { Readable } from "node:stream";
import type Dockerode from "dockerode";
import tar from "tar-stream";
import { isDockerNotFound } from "../../host-agent/src/runtime/errors.js";
import { DockerImageError } from "./errors.js";
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

/** Imports the node base image unless it already exists; returns its tag. */
export async function ensureNodeBaseImage(docker: Dockerode, log: (line: string) => void): Promise<string> {
  const rootfs = await planNodeRootfs();
  const ref = `${NODE_BASE_REPO}:${rootfs.tag}`;
  if (await imageExists(docker, ref)) {
    log(`base image ${ref} present`);
    return ref;
  }
  const megabytes = rootfs.files.reduce((sum, file) => sum + file.size, 0) / 1024 / 1024;
  log(
    `importing base image ${ref} (node + ${rootfs.files.length - 1} libraries, ${megabytes.toFixed(0)} MB)`,
  );
  const startedAt = Date.now();
  const stream = await docker.importImage(asNodeStream(packNodeRootfs(rootfs)), {
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
): Promise<string> {
  const base = await ensureNodeBaseImage(docker, log);
  const files = contextFiles(bundles);
  const dockerfile = droidDockerfile(base, [...files.keys()]);
  const hash = createHash("sha256").update(dockerfile);
  for (const [name, content] of files) hash.update(`\0${name}\0`).update(content);
  const contentHash = hash.digest("hex");

  if (await reuseExisting(docker, contentHash, log)) return DROID_IMAGE_TAG;

  log(`building ${DROID_IMAGE_TAG} FROM ${base} (content hash ${contentHash.slice(0, 12)})`);
  const startedAt = Date.now();
  const context = tar.pack();
  context.entry({ name: "Dockerfile" }, dockerfile);
  for (const [name, content] of files) context.entry({ name, mode: 0o644 }, content);
  context.finalize();
  const stream = await docker.buildImage(asNodeStream(context), {
    t: DROID_IMAGE_TAG,
    labels: { [CONTENT_HASH_LABEL]: contentHash, "oubliette.image": "droid" },
    rm: true,
    forcerm: true,
  });
  const result = await readProgress(stream, log);
  if (result.error !== null) {
    throw new DockerImageError("build_failed", `building ${DROID_IMAGE_TAG} failed: ${result.error}`);
  }
  log(`built ${DROID_IMAGE_TAG} in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  await pruneOldDroidImages(docker, log);
  return DROID_IMAGE_TAG;
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

function droidDockerfile(base: string, names: string[]): string {
  return [
    `FROM ${base}`,
    `COPY ${names.join(" ")} /opt/oubliette/`,
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
async function reuseExisting(docker: Dockerode, contentHash: string, log: (line: string) => void) {
  const matches = await docker.listImages({ filters: { label: [`${CONTENT_HASH_LABEL}=${contentHash}`] } });
  const image = matches[0];
  if (image === undefined) return false;
  if (!(image.RepoTags ?? []).includes(DROID_IMAGE_TAG)) {
    await docker.getImage(image.Id).tag({ repo: DROID_REPO, tag: DROID_TAG });
    log(`${DROID_IMAGE_TAG} re-tagged to the existing build ${image.Id.slice(7, 19)}`);
  } else {
    log(`${DROID_IMAGE_TAG} is up to date (content hash ${contentHash.slice(0, 12)})`);
  }
  return true;
}

/** Removes earlier droid builds that lost their tag, so repeated builds do not pile up. */
async function pruneOldDroidImages(docker: Dockerode, log: (line: string) => void): Promise<void> {
  const pruned = await docker.pruneImages({ filters: { dangling: ["true"], label: [CONTENT_HASH_LABEL] } });
  const count = pruned.ImagesDeleted?.filter((entry) => entry.Deleted !== undefined).length ?? 0;
  if (count > 0) log(`pruned ${count} old droid image layer(s)`);
}

async function imageExists(docker: Dockerode, ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch (error) {
    if (isDockerNotFound(error)) return false;
    throw error;
  }
}

/** tar-stream packs are streamx streams; dockerode wants a Node stream of bytes. */
function asNodeStream(pack: tar.Pack): Readable {
  return Readable.from(pack, { objectMode: false });
}
