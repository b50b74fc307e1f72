/**
 * Bundles fetched for a container (docs/git.md, the agent's own `git fetch`): kept in the
 * project's data directory on the host until the container-client has read them (in chunks that
 * fit one socket line) or for ten minutes, whichever is first.
 */
import { randomUUID } from "node:crypto";
import { open, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { GIT_FETCH_CHUNK_BYTES } from "../../../protocol/tunnel-git.js";
import { HostError } from "../projects/errors.js";

const KEEP_MS = 10 * 60_000;
/** Most bundles a project keeps unread at once: an agent fetching in a loop fills no disk. */
export const MAX_KEPT_BUNDLES = 4;

interface Kept {
  file: string;
  bytes: number;
  timer: NodeJS.Timeout;
}

export class FetchBundles {
  readonly #kept = new Map<string, Kept>();

  constructor(readonly dir: string) {}

  /** A new file name for a bundle (in the host's own directory); refused while too many are unread. */
  path(): { id: string; file: string } {
    if (this.#kept.size >= MAX_KEPT_BUNDLES)
      throw new HostError("busy", `${MAX_KEPT_BUNDLES} fetched bundles are still unread; read them or wait`);
    const id = randomUUID();
    return { id, file: join(this.dir, `fetch-${id}.bundle`) };
  }

  /** Keeps the bundle written at `file` under `id`; its size. */
  async keep(id: string, file: string): Promise<number> {
    const { size } = await stat(file);
    const timer = setTimeout(() => void this.#drop(id), KEEP_MS);
    timer.unref();
    this.#kept.set(id, { file, bytes: size, timer });
    return size;
  }

  /** Bytes from `offset` (at most one chunk), base64; read to its end, the bundle is gone. */
  async read(id: string, offset: number): Promise<{ data: string; eof: boolean }> {
    const kept = this.#kept.get(id);
    if (!kept) throw new HostError("not_found", "no such fetched bundle here (it was read, or it expired)");
    const length = Math.max(0, Math.min(GIT_FETCH_CHUNK_BYTES, kept.bytes - offset));
    const buffer = Buffer.alloc(length);
    const handle = await open(kept.file, "r");
    try {
      await handle.read(buffer, 0, length, offset);
    } finally {
      await handle.close();
    }
    const eof = offset + length >= kept.bytes;
    if (eof) await this.#drop(id);
    return { data: buffer.toString("base64"), eof };
  }

  async #drop(id: string): Promise<void> {
    const kept = this.#kept.get(id);
    if (!kept) return;
    this.#kept.delete(id);
    clearTimeout(kept.timer);
    await rm(kept.file, { force: true });
  }
}
