/**
 * The Docker Engine the host-agent runs containers through: whether it answers on its socket
 * (`ping`, `version`), and what it says of itself (`info`). The host-agent starts every
 * container with `NetworkMode: none` (runtime/docker-runtime.ts), which every Docker Engine
 * offers through its built-in `null` network driver; the check says so when the engine lists
 * its drivers, and claims nothing more.
 */
import type Dockerode from "dockerode";
import { z } from "zod";
import type { DoctorFinding } from "./finding.js";

const VersionSchema = z.looseObject({ Version: z.string(), ApiVersion: z.string() });
const InfoSchema = z.looseObject({
  ServerVersion: z.string().optional(),
  OperatingSystem: z.string().optional(),
  Plugins: z.looseObject({ Network: z.array(z.string()).nullish() }).nullish(),
});

const INSTALL_FIX =
  "start Docker (systemctl start docker); if it is not installed: apt-get install docker.io (Debian, Ubuntu) " +
  "or https://docs.docker.com/engine/install/; or point DOCKER_HOST at its unix:// socket";

/** Why the engine did not answer, from the socket's error code (the path is not secret). */
function unreachable(error: unknown, socket: string): Pick<DoctorFinding, "detail" | "fix"> {
  const code = (error as { code?: unknown }).code;
  if (code === "ENOENT") return { detail: `no Docker Engine socket at ${socket}`, fix: INSTALL_FIX };
  if (code === "ECONNREFUSED")
    return { detail: `nothing accepts connections on ${socket} (is dockerd running?)`, fix: INSTALL_FIX };
  if (code === "EACCES" || code === "EPERM")
    return {
      detail: `permission denied on ${socket}`,
      fix: "run the host-agent as root (it also needs root to give workspaces to the sessions' uids), or as a user in the docker group",
    };
  const message = error instanceof Error ? error.message : String(error);
  return { detail: `the Docker Engine on ${socket} did not answer: ${message}`, fix: INSTALL_FIX };
}

/** Check 1: the engine answers `ping` and `version` on its socket. */
export async function checkDockerEngine(docker: Dockerode, socket: string): Promise<DoctorFinding> {
  try {
    await docker.ping();
    const version = VersionSchema.parse(await docker.version());
    return {
      check: "docker",
      ok: true,
      detail: `Docker Engine ${version.Version} (API ${version.ApiVersion}) answers on ${socket}`,
    };
  } catch (error) {
    return { check: "docker", ok: false, ...unreachable(error, socket) };
  }
}

/** Check 2: `info` works, and the engine has what `NetworkMode: none` needs. */
export async function checkDockerNetwork(docker: Dockerode, socket: string): Promise<DoctorFinding> {
  let info: z.infer<typeof InfoSchema>;
  try {
    info = InfoSchema.parse(await docker.info());
  } catch (error) {
    return { check: "docker-network", ok: false, ...unreachable(error, socket) };
  }
  const engine = `Docker ${info.ServerVersion ?? "(version not given)"}${info.OperatingSystem ? ` on ${info.OperatingSystem}` : ""}`;
  const drivers = info.Plugins?.Network;
  if (drivers && !drivers.includes("null"))
    return {
      check: "docker-network",
      ok: false,
      detail: `${engine} lists no "null" network driver (has ${drivers.join(", ") || "none"}); the host-agent starts containers with NetworkMode none`,
      fix: "use a Docker Engine with its built-in networks (bridge, host, none)",
    };
  return {
    check: "docker-network",
    ok: true,
    detail: drivers
      ? `${engine}; containers start with no network (NetworkMode none: its "null" driver is there)`
      : `${engine}; it does not list its network drivers; containers are started with NetworkMode none`,
  };
}
