/**
 * Pulling an image a project names that the engine does not have, when the host allows it
 * (`--image-pull missing`, the default): the engine fetches it from its registry; its progress goes
 * to the log, a line per layer step at most every PROGRESS_EVERY_MS. A host whose engine reaches
 * no registry says so, with what to do instead (`docker load`).
 */
import type Dockerode from "dockerode";
import { readProgress } from "../images/progress.js";
import { errorMessage, RuntimeError } from "./errors.js";

/** Whether a host pulls an image its engine lacks. */
export type ImagePullPolicy = "missing" | "never";

/** How often a pull's progress is logged at most. */
const PROGRESS_EVERY_MS = 2_000;

/** Pulls `ref`; throws RuntimeError("image_not_found") with the engine's reason and the way round it. */
export async function pullImage(docker: Dockerode, ref: string, log: (line: string) => void): Promise<void> {
  let last = 0;
  const throttled = (line: string) => {
    const now = Date.now();
    if (now - last < PROGRESS_EVERY_MS) return;
    last = now;
    log(line.trim());
  };
  let error: string | null;
  try {
    const stream = await docker.pull(ref);
    ({ error } = await readProgress(stream, throttled));
  } catch (cause) {
    error = errorMessage(cause);
  }
  if (error !== null) throw notPulled(ref, error);
  log(`pulled ${ref}`);
}

/** The refusal of an image that is neither on this host nor pullable. */
export function notPulled(ref: string, reason: string): RuntimeError {
  return new RuntimeError(
    "image_not_found",
    `image ${ref} is not on this host and its engine could not pull it (${reason}); a host without a ` +
      `registry loads it instead: \`docker save ${ref} -o image.tar\` where it is, then \`docker load -i image.tar\` here`,
  );
}
