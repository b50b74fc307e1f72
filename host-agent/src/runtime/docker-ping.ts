/**
 * Finding and probing the Docker Engine's Unix socket. Only unix:// is supported: containers
 * bind-mount host directories, which only makes sense for an engine on this machine.
 */
import { existsSync } from "node:fs";
import Dockerode from "dockerode";

export const DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock";

/** The engine socket named by DOCKER_HOST (unix:// only) or the default; null for an unsupported DOCKER_HOST. */
export function dockerSocketPath(env: NodeJS.ProcessEnv = process.env): string | null {
  const host = env.DOCKER_HOST;
  if (host === undefined || host === "") return DEFAULT_DOCKER_SOCKET;
  return host.startsWith("unix://") ? host.slice("unix://".length) : null;
}

/** True when an engine answers a ping on the socket within the timeout. */
export async function pingDocker(socketPath: string, timeoutMs = 1_000): Promise<boolean> {
  if (!existsSync(socketPath)) return false;
  const docker = new Dockerode({ socketPath, timeout: timeoutMs });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([docker.ping().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
