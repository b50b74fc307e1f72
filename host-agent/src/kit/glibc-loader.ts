/**
 * The kit's own copy of this machine's glibc dynamic loader, changed so that programs it starts
 * in any image load the kit's libraries and never the image's: a glibc image may hold another
 * glibc (mixing two is fatal) and a musl or distroless one none at all. Three strings of the
 * loader are replaced by paths of the same length, so nothing in the file moves:
 * - its first default library directory (Debian's multiarch `/lib/<triplet>/`) becomes the kit's
 *   library directory, searched before the image's `/usr/lib/<triplet>/`, `/lib/` and `/usr/lib/`;
 * - `/etc/ld.so.cache` and `/etc/ld.so.preload` become paths under the kit that never exist, so
 *   the image's cache cannot send a program to its libraries, nor its preload list add any.
 * The programs themselves get the kit's loader as their interpreter (elf.ts). A loader of
 * another layout is refused with what was not found.
 */
import { KitError } from "./errors.js";

export interface KitLoader {
  bytes: Buffer;
  /** The kit's library directory, as the container sees it (ends with "/"). */
  libDir: string;
}

/** Debian's default directories: `/lib/<triplet>/` then `/usr/lib/<triplet>/`, each NUL-ended. */
const SYSTEM_DIRS = /\/lib\/([a-z0-9_]+-linux-gnu[a-z0-9_]*)\/\0\/usr\/lib\/\1\/\0/g;
const CACHE = "/etc/ld.so.cache";
const PRELOAD = "/etc/ld.so.preload";

/** A path under `root` exactly `length` characters long, named after `stem` (cut or padded with "_"). */
export function pathOfLength(root: string, length: number, stem: string): string {
  const room = length - root.length - 1;
  if (room < 1) {
    throw new KitError("loader_layout", `the kit's root ${root} is too long for a ${length}-character path`);
  }
  return `${root}/${stem.padEnd(room, "_").slice(0, room)}`;
}

/** The loader `loader` (a copy of this machine's) changed to load libraries from under `root` only. */
export function kitLoader(loader: Buffer, root: string): KitLoader {
  let text = loader.toString("latin1");
  const dirs = [...text.matchAll(SYSTEM_DIRS)];
  const first = dirs[0];
  if (first === undefined) {
    throw new KitError(
      "loader_layout",
      "this machine's glibc loader has no Debian-style default library directories (/lib/<triplet>/ then " +
        "/usr/lib/<triplet>/): the kit cannot point it at its own libraries",
    );
  }
  const system = `/lib/${first[1]}/`;
  // The library directory keeps the trailing "/" the loader's table has.
  const libDir = `${pathOfLength(root, system.length - 1, "lib")}/`;
  text = text.replaceAll(first[0], first[0].replace(system, libDir));
  for (const [path, stem] of [
    [CACHE, "none"],
    [PRELOAD, "none"],
  ] as const) {
    const needle = `${path}\0`;
    if (!text.includes(needle)) {
      throw new KitError("loader_layout", `this machine's glibc loader does not name ${path}`);
    }
    text = text.replaceAll(needle, `${pathOfLength(root, path.length, stem)}\0`);
  }
  const bytes = Buffer.from(text, "latin1");
  if (bytes.length !== loader.length) throw new KitError("loader_layout", "the loader changed size");
  return { bytes, libDir };
}
