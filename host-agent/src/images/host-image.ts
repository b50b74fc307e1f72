/**
 * The host-agent itself as a local image (`host-agent images --host-image`): FROM the node base,
 * with the one built file, run as root (it needs the Docker socket, and gives workspaces to the
 * sessions' users). The documented alternative to a systemd service (README "Deploy"): run with
 * the engine's socket and the data and socket directories mounted at the same paths as on the
 * host, since the containers it starts bind-mount those host paths.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type Dockerode from "dockerode";
import tar from "tar-stream";
import { HOST_AGENT_NODE_FLAGS, HOST_AGENT_PROCESS_ENV } from "../node-flags.js";
import { DockerImageError } from "./errors.js";
import { ensureImage, ensureNodeBaseImage } from "./images.js";
import { PACKAGE_CACHE } from "./package-cache.js";

export const HOST_AGENT_REPO = "oubliette/host-agent";

/** Where the image keeps its data and sockets unless told otherwise (mount these host paths there). */
export const HOST_IMAGE_DATA_DIR = "/var/lib/oubliette";
export const HOST_IMAGE_SOCKET_DIR = "/run/oubliette";

function hostDockerfile(base: string): string {
  const entrypoint = JSON.stringify(["node", ...HOST_AGENT_NODE_FLAGS, "/opt/oubliette/host-agent.mjs"]);
  return [
    `FROM ${base}`,
    "COPY host-agent.mjs /opt/oubliette/host-agent.mjs",
    "ENV NODE_OPTIONS=--enable-source-maps",
    ...Object.entries(HOST_AGENT_PROCESS_ENV).map(([name, value]) => `ENV ${name}=${value}`),
    `ENV OUBLIETTE_DATA_DIR=${HOST_IMAGE_DATA_DIR} OUBLIETTE_SOCKET_DIR=${HOST_IMAGE_SOCKET_DIR}`,
    // A project's loop-mounted filesystem needs privileges a container does not have.
    "ENV OUBLIETTE_DISK_MODE=measured",
    "USER 0:0",
    `ENTRYPOINT ${entrypoint}`,
    // `docker run <image> doctor` (or images, service --help) runs another subcommand.
    'CMD ["start"]',
    "",
  ].join("\n");
}

/** Builds `oubliette/host-agent:<version>` from the host-agent file `artefact` unless up to date; returns its tag. */
export async function ensureHostAgentImage(
  docker: Dockerode,
  artefact: string,
  version: string,
  log: (line: string) => void,
  cacheDir: string = PACKAGE_CACHE,
): Promise<string> {
  let file: Buffer;
  try {
    file = readFileSync(artefact);
  } catch (error) {
    throw new DockerImageError(
      "bundle_missing",
      `cannot read the host-agent file ${artefact}: ${(error as Error).message}`,
    );
  }
  const base = await ensureNodeBaseImage(docker, log, cacheDir);
  const dockerfile = hostDockerfile(base);
  const baseId = (await docker.getImage(base).inspect()).Id;
  const contentHash = createHash("sha256").update(`${baseId}\0${dockerfile}\0`).update(file).digest("hex");
  return ensureImage(
    docker,
    {
      repo: HOST_AGENT_REPO,
      tag: version,
      kind: "host-agent",
      base,
      contentHash,
      context: () => {
        const context = tar.pack();
        context.entry({ name: "Dockerfile" }, dockerfile);
        context.entry({ name: "host-agent.mjs", mode: 0o755 }, file);
        context.finalize();
        return context;
      },
    },
    log,
  );
}
