/**
 * Images that are not ours: any Linux image a project names. Ours carry the `oubliette.image`
 * label and hold the runner; any other runs with the runner kit mounted (kit/runner-kit.ts) and
 * its own PATH first, provided it is built for this host's platform (the kit's programs are this
 * machine's). The decision is made on the image's configuration, before a container exists.
 */
import type Dockerode from "dockerode";
import { KitPaths } from "../../../protocol/container-layout.js";
import { AgentEnv } from "../../../protocol/socket.js";
import type { KitMounts } from "../kit/runner-kits.js";
import { errorMessage, isDockerNotFound, RuntimeError } from "./errors.js";
import { type ImagePullPolicy, pullImage } from "./image-pull.js";

/** The label our images carry (images.ts); an image without it gets the runner kit. */
export const OUR_IMAGE_LABEL = "oubliette.image";
/** PATH of an image that sets none (Docker's own default). */
const DOCKER_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Docker's names for Node's `process.arch`. */
const DOCKER_ARCH: Readonly<Record<string, string>> = { x64: "amd64", arm64: "arm64" };

export interface ImageCheck {
  /** Not one of ours: the container needs the runner kit. */
  foreign: boolean;
  /** The image's id (the digest of its configuration): what a project pins. */
  id: string;
  /** The image's own PATH (Docker's default when it sets none). */
  path: string;
}

/**
 * Inspects `image` (pulling it first when the engine lacks it and `pull` allows): ours or not, and
 * for one that is not, whether this host can run it.
 */
export async function foreignImageCheck(
  docker: Dockerode,
  image: string,
  pull: { policy: ImagePullPolicy; log: (line: string) => void } = { policy: "never", log: () => {} },
): Promise<ImageCheck> {
  let info = await inspectImage(docker, image);
  if (info === null && pull.policy === "missing") {
    await pullImage(docker, image, pull.log);
    info = await inspectImage(docker, image);
  }
  if (info === null) {
    throw new RuntimeError(
      "image_not_found",
      `image ${image} does not exist on this host's Docker Engine; build it (npm run build, then the ` +
        "droid image), load it (docker load) or name an existing image",
    );
  }
  const path =
    (info.Config?.Env ?? []).find((entry) => entry.startsWith("PATH="))?.slice(5) || DOCKER_DEFAULT_PATH;
  if (info.Config?.Labels?.[OUR_IMAGE_LABEL] !== undefined) return { foreign: false, id: info.Id, path };
  refuseOtherPlatform(image, info.Os, info.Architecture, hostPlatform());
  return { foreign: true, id: info.Id, path };
}

/** The image's configuration, or null when the engine has no such image. */
async function inspectImage(docker: Dockerode, image: string): Promise<Dockerode.ImageInspectInfo | null> {
  try {
    return await docker.getImage(image).inspect();
  } catch (error) {
    if (isDockerNotFound(error)) return null;
    throw new RuntimeError("runtime_error", `could not inspect image ${image}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

/** This host's platform as Docker names it. */
export function hostPlatform(): { os: string; architecture: string } {
  return { os: "linux", architecture: DOCKER_ARCH[process.arch] ?? process.arch };
}

/** Throws RuntimeError("unsupported") for an image of another OS or architecture than `host`. */
export function refuseOtherPlatform(
  image: string,
  os: string | undefined,
  architecture: string | undefined,
  host: { os: string; architecture: string },
): void {
  if (os === host.os && architecture === host.architecture) return;
  throw new RuntimeError(
    "unsupported",
    `image ${image} is built for ${os ?? "an unknown OS"}/${architecture ?? "an unknown architecture"}; ` +
      `this host runs ${host.os}/${host.architecture} containers only (use an image of that platform)`,
  );
}

export interface KitContainerConfig {
  /** The kit's id (a container label). */
  id: string;
  /** The runner, as the image's command. */
  cmd: string[];
  /** PATH (the image's, then the kit's programs) and the scripted droid's command. */
  env: Record<string, string>;
  /** The kit and the agent CLI, read-only. */
  binds: string[];
}

/** How a container of an image that is not ours is made with the kit `mounts`. */
export function kitContainerConfig(mounts: KitMounts, imagePath: string): KitContainerConfig {
  const binds = [`${mounts.kit.hostDir}:${KitPaths.root}:ro`];
  if (mounts.cli !== null) binds.push(`${mounts.cli.hostDir}:${mounts.cli.containerDir}:ro`);
  return {
    id: mounts.kit.id,
    cmd: [KitPaths.node, KitPaths.containerClient, "runner"],
    env: {
      // The image's tools first; ours only where it has none (node, git's remote helper).
      PATH: `${imagePath}:${KitPaths.bin}`,
      [AgentEnv.agentCommand]: JSON.stringify([KitPaths.node, KitPaths.scriptedDroid]),
    },
    binds,
  };
}
