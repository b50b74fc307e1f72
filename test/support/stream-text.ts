/** Small helpers for tests that read a child's or container's output streams. */
import type { Readable } from "node:stream";

/** Collects a stream's text until it ends. */
export async function readAllText(stream: Readable, timeoutMs = 20_000): Promise<string> {
  let text = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    text += chunk;
  });
  stream.resume();
  await withTimeout(
    new Promise<void>((resolve) => stream.once("end", () => resolve())),
    timeoutMs,
    () => `stream did not end within ${timeoutMs} ms; got so far: ${JSON.stringify(text)}`,
  );
  return text;
}

/** Resolves with the first complete line matching `predicate` (lines read with it are consumed). */
export async function readLineMatching(
  stream: Readable,
  predicate: (line: string) => boolean,
  timeoutMs = 20_000,
): Promise<string> {
  let buffered = "";
  let onData: ((chunk: Buffer | string) => void) | undefined;
  const found = new Promise<string>((resolve) => {
    onData = (chunk) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      const match = lines.find(predicate);
      if (match !== undefined) resolve(match);
    };
    stream.on("data", onData);
  });
  try {
    return await withTimeout(found, timeoutMs, () => `no matching line within ${timeoutMs} ms`);
  } finally {
    if (onData) stream.off("data", onData);
    // Hold later output for the next reader instead of letting it flow away.
    stream.pause();
  }
}

/** Rejects with `message()` when `promise` does not settle in time. */
export async function withTimeout<T>(
  promise: Promise<T>,
  timeoutMs: number,
  message: () => string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
