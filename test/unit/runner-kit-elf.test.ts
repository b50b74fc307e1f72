/**
 * The runner kit's binary surgery: reading and replacing an ELF program's interpreter (synthetic
 * files and this machine's setpriv), and pointing a copy of this machine's glibc loader at the
 * kit's libraries; and how a host decides on an image that is not ours.
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { copyWithInterp, interpBytes, readElf, readElfFile } from "../../host-agent/src/kit/elf.js";
import { KitError } from "../../host-agent/src/kit/errors.js";
import { kitLoader, pathOfLength } from "../../host-agent/src/kit/glibc-loader.js";
import { RuntimeError } from "../../host-agent/src/runtime/errors.js";
import { kitContainerConfig, refuseOtherPlatform } from "../../host-agent/src/runtime/foreign-image.js";
import { KitPaths } from "../../protocol/container-layout.js";

const dir = mkdtempSync(join(tmpdir(), "kit-elf-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A minimal 64-bit little-endian ELF: its header, one program header (PT_INTERP or PT_LOAD), then `interp`. */
function syntheticElf(interp: string | null, machine = 62, interpRoom = 28): Buffer {
  const file = Buffer.alloc(64 + 56 + interpRoom);
  file.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
  file.writeUInt16LE(2, 0x10); // ET_EXEC
  file.writeUInt16LE(machine, 0x12);
  file.writeBigUInt64LE(64n, 0x20); // e_phoff
  file.writeUInt16LE(56, 0x36); // e_phentsize
  file.writeUInt16LE(1, 0x38); // e_phnum
  file.writeUInt32LE(interp === null ? 1 : 3, 64); // PT_LOAD or PT_INTERP
  file.writeBigUInt64LE(120n, 64 + 8); // p_offset
  file.writeBigUInt64LE(BigInt(interpRoom), 64 + 32); // p_filesz
  if (interp !== null) file.write(`${interp}\0`, 120, "latin1");
  return file;
}

const reader = (file: Buffer) => (offset: number, length: number) => file.subarray(offset, offset + length);

describe("an ELF program's interpreter", () => {
  it("is read with the machine, or is null for a program without one", () => {
    expect(readElf(reader(syntheticElf("/lib64/ld-linux-x86-64.so.2")))).toEqual({
      machine: 62,
      interp: { path: "/lib64/ld-linux-x86-64.so.2", offset: 120, size: 28 },
    });
    expect(readElf(reader(syntheticElf(null, 183)))).toEqual({ machine: 183, interp: null });
  });

  it("refuses what is not a 64-bit little-endian ELF file, by code", () => {
    const refusal = (file: Buffer) => {
      try {
        readElf(reader(file), "the file");
      } catch (error) {
        return error instanceof KitError ? error.code : `not a KitError: ${error}`;
      }
      return "read";
    };
    expect(refusal(Buffer.from("#!/bin/sh\necho hello\n".padEnd(80, " ")))).toBe("not_elf");
    const thirtyTwo = syntheticElf("/lib/ld-linux.so.2");
    thirtyTwo[4] = 1;
    expect(refusal(thirtyTwo)).toBe("not_elf");
    const truncated = syntheticElf("/lib64/ld-linux-x86-64.so.2").subarray(0, 100);
    expect(refusal(truncated)).toBe("not_elf");
  });

  it("is replaced by a path that fits, padded with NUL bytes; one that does not fit is refused", () => {
    expect(interpBytes("/a/b", 8)).toEqual(Buffer.from("/a/b\0\0\0\0", "latin1"));
    expect(() => interpBytes("/a/much/longer/path", 8)).toThrow(/longer than the 7 bytes/);
  });

  it("is replaced in a copy of this machine's setpriv, and nothing else in the file changes", () => {
    const setpriv = realpathSync("/usr/bin/setpriv");
    const copy = join(dir, "setpriv");
    copyWithInterp(setpriv, copy, KitPaths.loader);
    const before = readFileSync(setpriv);
    const after = readFileSync(copy);
    expect(after.length).toBe(before.length);
    const original = readElfFile(setpriv).interp;
    expect(original?.path).toMatch(/\/ld-linux[^/]*\.so\.\d$/);
    expect(readElfFile(copy).interp).toEqual({ ...original, path: KitPaths.loader });
    const changed: number[] = [];
    for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) changed.push(i);
    const start = original?.offset ?? -1;
    expect(changed.every((i) => i >= start && i < start + (original?.size ?? 0))).toBe(true);
    expect(statSync(copy).size).toBe(statSync(setpriv).size);
  });
});

describe("the kit's copy of the glibc loader", () => {
  const loader = readFileSync(realpathSync("/lib64/ld-linux-x86-64.so.2"));

  it("searches the kit's library directory first and reads neither the image's cache nor its preload list", () => {
    const patched = kitLoader(loader, KitPaths.root);
    expect(patched.bytes.length).toBe(loader.length);
    expect(patched.libDir).toBe("/.oubliette/lib______/");
    expect(patched.libDir.length).toBe("/lib/x86_64-linux-gnu/".length);
    const text = patched.bytes.toString("latin1");
    expect(text).toContain(`${patched.libDir}\0/usr/lib/x86_64-linux-gnu/\0/lib/\0/usr/lib/\0`);
    expect(text).not.toContain("/lib/x86_64-linux-gnu/\0/usr/lib/x86_64-linux-gnu/\0");
    expect(text).not.toContain("/etc/ld.so.cache\0");
    expect(text).not.toContain("/etc/ld.so.preload\0");
    expect(text).toContain("/.oubliette/none\0");
    expect(text).toContain("/.oubliette/none__\0");
  });

  it("refuses a loader it does not know how to point elsewhere", () => {
    expect(() => kitLoader(Buffer.from("no loader here"), KitPaths.root)).toThrow(
      expect.objectContaining({ code: "loader_layout" }),
    );
  });

  it("names paths of an exact length under the kit's root", () => {
    expect(pathOfLength("/.oubliette", 16, "none")).toBe("/.oubliette/none");
    expect(pathOfLength("/.oubliette", 14, "none")).toBe("/.oubliette/no");
    expect(() => pathOfLength("/.oubliette", 12, "x")).toThrow(KitError);
  });
});

describe("an image that is not ours", () => {
  it("is refused when built for another platform, naming both", () => {
    const host = { os: "linux", architecture: "amd64" };
    expect(() => refuseOtherPlatform("img", "linux", "amd64", host)).not.toThrow();
    let refused: unknown;
    try {
      refuseOtherPlatform("python:arm", "linux", "arm64", host);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RuntimeError);
    expect(refused).toMatchObject({ code: "unsupported" });
    expect((refused as Error).message).toContain("linux/arm64");
    expect((refused as Error).message).toContain("linux/amd64");
    expect(() => refuseOtherPlatform("win", "windows", "amd64", host)).toThrow(/windows\/amd64/);
  });

  it("runs the runner from the kit, its PATH first and the kit's last, the kit and CLI read-only", () => {
    const config = kitContainerConfig(
      {
        kit: { hostDir: "/data/kits/abc", id: "abc" },
        cli: { hostDir: "/data/kits/agents/claude-1", containerDir: "/opt/agents/claude" },
      },
      "/usr/local/bin:/usr/bin",
    );
    expect(config.cmd).toEqual([KitPaths.node, KitPaths.containerClient, "runner"]);
    expect(config.env.PATH).toBe(`/usr/local/bin:/usr/bin:${KitPaths.bin}`);
    expect(JSON.parse(config.env.OUBLIETTE_AGENT_COMMAND ?? "")).toEqual([
      KitPaths.node,
      KitPaths.scriptedDroid,
    ]);
    expect(config.binds).toEqual([
      `/data/kits/abc:${KitPaths.root}:ro`,
      "/data/kits/agents/claude-1:/opt/agents/claude:ro",
    ]);
  });
});
