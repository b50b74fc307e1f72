/** Typed failures of the runner kit (what a host brings into an image that is not ours). */

export type KitErrorCode =
  /** A program of this machine is not an ELF file the kit knows how to carry (64-bit, little-endian). */
  | "not_elf"
  /** This machine's glibc loader is laid out in a way the kit cannot point at its own libraries. */
  | "loader_layout"
  /** The project's image is for another architecture or OS than this host runs. */
  | "image_platform"
  /** A program or library the kit needs is missing on this machine. */
  | "missing";

export class KitError extends Error {
  override readonly name = "KitError";
  readonly code: KitErrorCode;

  constructor(code: KitErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
