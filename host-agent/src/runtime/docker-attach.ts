/**
 * One container's stdio as an AgentProcess: a hijacked attach connection carries stdin one way
 * and the multiplexed stdout/stderr frames the other; the frames are split into two streams.
 */
import { Duplex, PassThrough, Writable } from "node:stream";
import type Dockerode from "dockerode";
import { z } from "zod";
import type { Logger } from "../../../lib/log.js";
import { errorMessage } from "./errors.js";
import type { AgentExit, AgentProcess } from "./types.js";

const WaitResultSchema = z.looseObject({ StatusCode: z.number().int() });
/** How long stop() lets the attach stream deliver the last output before closing it. */
const DRAIN_AFTER_STOP_MS = 2_000;

export interface AttachedContainer {
  /** Closes the attach connection (used when start fails). */
  destroy(): void;
  /** Wraps the started container as an AgentProcess. */
  toAgentProcess(options: { id: string; stop: (reason: string) => Promise<void> }): AgentProcess;
}

/** Attaches to a created (not yet started) container's stdin, stdout and stderr. */
export async function attachContainer(
  docker: Dockerode,
  container: Dockerode.Container,
  logger: Logger,
): Promise<AttachedContainer> {
  const stream = await container.attach({
    stream: true,
    stdin: true,
    stdout: true,
    stderr: true,
    hijack: true,
  });
  // With hijack, docker-modem hands back the raw upgraded socket.
  if (!(stream instanceof Duplex)) throw new Error("docker attach did not return a duplex stream");
  const socket = stream;
  socket.on("error", (error) => logger.warn({ err: errorMessage(error) }, "attach stream error"));
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  docker.modem.demuxStream(socket, stdout, stderr);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const endOutputs = () => {
    stdout.end();
    stderr.end();
  };
  socket.once("end", endOutputs);
  socket.once("close", endOutputs);

  return {
    destroy: () => socket.destroy(),
    toAgentProcess: ({ id, stop }) => {
      const stdin = stdinWriter(socket);
      // Writes after the container died fail; the exit is reported through `exited`, so a
      // crash on an unhandled 'error' would only hide it. Callers may listen too.
      stdin.on("error", (error) => logger.debug({ err: errorMessage(error) }, "stdin write failed"));
      const exited = waitForExit(container, logger);
      let stopping: Promise<void> | undefined;
      return {
        id,
        stdin,
        stdout,
        stderr,
        exited,
        stop: (reason) => {
          stopping ??= (async () => {
            stdin.end();
            await stop(reason);
            await Promise.race([closed, delay(DRAIN_AFTER_STOP_MS)]);
            socket.destroy();
          })();
          return stopping;
        },
      };
    },
  };
}

/**
 * stdin as its own Writable, so a caller ending or destroying it cannot tear down the reading
 * half of the shared socket. Each write completes when the socket flushed it (backpressure).
 */
function stdinWriter(socket: Duplex): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (socket.destroyed || socket.writableEnded) {
        callback(new Error("container stdin is closed"));
        return;
      }
      socket.write(chunk, (error) => callback(error ?? null));
    },
    final(callback) {
      if (!socket.destroyed && !socket.writableEnded) socket.end();
      callback();
    },
  });
}

async function waitForExit(container: Dockerode.Container, logger: Logger): Promise<AgentExit> {
  try {
    const parsed = WaitResultSchema.safeParse(await container.wait());
    if (!parsed.success) {
      logger.warn("unexpected container wait result");
      return { exitCode: null, signal: null };
    }
    // The engine reports only a status; a signal death shows as 128+n (tini follows that rule).
    return { exitCode: parsed.data.StatusCode, signal: null };
  } catch (error) {
    logger.warn({ err: errorMessage(error) }, "container wait failed");
    return { exitCode: null, signal: null };
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
