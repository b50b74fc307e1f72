/**
 * The little of ELF the runner kit reads and writes: a 64-bit little-endian program's machine and
 * its program interpreter (PT_INTERP, the dynamic loader the kernel starts it with). The kit
 * rewrites that path in its copies of this machine's programs so they start with the kit's own
 * loader, whatever libc (or none) the image has. The string is rewritten in place, padded with NUL
 * bytes, so no offset in the file moves; only the headers are read (a Node binary is ~100 MB).
 */
import { closeSync, copyFileSync, openSync, readSync, writeSync } from "node:fs";
import { KitError } from "./errors.js";

const PT_INTERP = 3;
/** e_machine → the platform name Docker gives an image's architecture. */
export const ELF_MACHINES: Readonly<Record<number, string>> = { 62: "amd64", 183: "arm64" };

export interface ElfInfo {
  /** e_machine (62: x86-64, 183: AArch64). */
  machine: number;
  /** The PT_INTERP string and where it sits in the file; null for a static program or a library. */
  interp: { path: string; offset: number; size: number } | null;
}

/** Reads `length` bytes at `offset` (fewer at the end of the file). */
export type ReadAt = (offset: number, length: number) => Buffer;

/** True when `head` starts like an ELF file (its first 4 bytes are enough). */
export function isElf(head: Uint8Array): boolean {
  return head[0] === 0x7f && head[1] === 0x45 && head[2] === 0x4c && head[3] === 0x46;
}

/** Reads the machine and interpreter of a 64-bit little-endian ELF file; throws KitError("not_elf") otherwise. */
export function readElf(read: ReadAt, name = "the file"): ElfInfo {
  const header = read(0, 64);
  if (header.length < 64 || !isElf(header)) throw new KitError("not_elf", `${name} is not an ELF file`);
  if (header[4] !== 2 || header[5] !== 1) {
    throw new KitError("not_elf", `${name} is not a 64-bit little-endian ELF file`);
  }
  const machine = header.readUInt16LE(0x12);
  const phoff = Number(header.readBigUInt64LE(0x20));
  const phentsize = header.readUInt16LE(0x36);
  const phnum = header.readUInt16LE(0x38);
  const table = read(phoff, phentsize * phnum);
  if (phentsize < 56 || table.length < phentsize * phnum) {
    throw new KitError("not_elf", `${name} has a program header table outside the file`);
  }
  for (let i = 0; i < phnum; i++) {
    const entry = i * phentsize;
    if (table.readUInt32LE(entry) !== PT_INTERP) continue;
    const offset = Number(table.readBigUInt64LE(entry + 8));
    const size = Number(table.readBigUInt64LE(entry + 32));
    const bytes = size >= 2 && size <= 4096 ? read(offset, size) : Buffer.alloc(0);
    if (bytes.length !== size)
      throw new KitError("not_elf", `${name} has an interpreter entry outside the file`);
    const end = bytes.indexOf(0);
    return { machine, interp: { path: bytes.toString("latin1", 0, end < 0 ? size : end), offset, size } };
  }
  return { machine, interp: null };
}

/** readElf of a file on disk. */
export function readElfFile(path: string): ElfInfo {
  const fd = openSync(path, "r");
  try {
    return readElf((offset, length) => {
      const buffer = Buffer.alloc(length);
      return buffer.subarray(0, readSync(fd, buffer, 0, length, offset));
    }, path);
  } finally {
    closeSync(fd);
  }
}

/**
 * The bytes that replace an interpreter entry of `size` bytes with `path`: the kernel reads exactly
 * that many and uses the string up to the first NUL, so the new path must fit with its NUL.
 */
export function interpBytes(path: string, size: number, name = "the file"): Buffer {
  const bytes = Buffer.from(`${path}\0`, "latin1");
  if (bytes.length > size) {
    throw new KitError(
      "not_elf",
      `${name}: the interpreter path ${path} is longer than the ${size - 1} bytes the file leaves for it`,
    );
  }
  return Buffer.concat([bytes, Buffer.alloc(size - bytes.length)]);
}

/** Copies the program `from` to `to` with `interp` as its interpreter; throws for a program without one. */
export function copyWithInterp(from: string, to: string, interp: string): void {
  const info = readElfFile(from);
  if (info.interp === null) throw new KitError("not_elf", `${from} has no interpreter (a static program?)`);
  const bytes = interpBytes(interp, info.interp.size, from);
  copyFileSync(from, to);
  const fd = openSync(to, "r+");
  try {
    writeSync(fd, bytes, 0, bytes.length, info.interp.offset);
  } finally {
    closeSync(fd);
  }
}
