/**
 * The toolchain every image carries (the node base's npm, npx and corepack, node-toolchain.ts,
 * and curl and make from this machine), in the droid image and each agent image the globalSetup
 * built: run as a session's uid in a container like a project's (no network, read-only root
 * filesystem, /tmp a tmpfs, no capabilities), each prints its pinned version, and npm installs a
 * local tarball offline, so npm is shown to work, not only to start.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NODE_TOOLCHAIN } from "../../host-agent/src/images/node-toolchain.js";
import { dockerContext } from "../support/docker-context.js";

const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });
const images = Object.entries(dockerContext().agentImages).filter(
  (entry): entry is [string, string] => entry[1] !== undefined,
);

/** A session's identity as the runner gives it: its own uid, the project's group. */
const SESSION_USER = "30001:1000";
const PROBE = { name: "oub-toolchain-probe", version: "1.0.0" };
const TARBALL = `/pkg/${PROBE.name}-${PROBE.version}.tgz`;

/** The first line of a host tool's `--version`, or null when this machine has no such tool. */
function hostVersion(tool: string): string | null {
  if (!existsSync(`/usr/bin/${tool}`) && !existsSync(`/bin/${tool}`)) return null;
  return execFileSync(tool, ["--version"], { encoding: "utf8" }).split("\n")[0] ?? "";
}
const CURL = hostVersion("curl");
const MAKE = hostVersion("make");

// One shell per container: every check in one start, and the first failure ends it.
const SCRIPT = [
  "set -e",
  'echo "npm=$(npm --version)"',
  'echo "npx=$(npx --version)"',
  'echo "corepack=$(corepack --version)"',
  ...(CURL === null ? [] : ['echo "curl=$(curl --version | head -n 1)"']),
  ...(MAKE === null ? [] : ['echo "make=$(make --version | head -n 1)"']),
  "mkdir /tmp/app && cd /tmp/app",
  `npm install --offline --no-audit --no-fund ${TARBALL}`,
  `node -e 'process.stdout.write("probe=" + require("${PROBE.name}") + "\\n")'`,
].join("\n");

let packageDir: string;
const created: Dockerode.Container[] = [];

beforeAll(() => {
  // A package made and packed on the host; the containers read its tarball from a read-only mount.
  packageDir = mkdtempSync(join(tmpdir(), "oub-toolchain-"));
  const source = join(packageDir, "source");
  const packed = join(packageDir, "packed");
  mkdirSync(source);
  mkdirSync(packed);
  writeFileSync(join(source, "package.json"), JSON.stringify({ ...PROBE, main: "index.js" }));
  writeFileSync(join(source, "index.js"), 'module.exports = "installed";\n');
  execFileSync("npm", ["pack", "--pack-destination", packed], { cwd: source, stdio: "ignore" });
  chmodSync(packageDir, 0o755);
  chmodSync(packed, 0o755);
});

afterAll(async () => {
  await Promise.all(created.map((container) => container.remove({ force: true }).catch(() => {})));
  rmSync(packageDir, { recursive: true, force: true });
});

/** Runs SCRIPT in `image` as SESSION_USER under a project container's restrictions; its output by key. */
async function runScript(
  image: string,
): Promise<{ code: number; values: Map<string, string>; output: string }> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: ["sh", "-c", SCRIPT],
    User: SESSION_USER,
    Env: ["HOME=/tmp", "npm_config_cache=/tmp/npm-cache", "npm_config_update_notifier=false"],
    // No TTY: npm draws no progress, and the log keeps stdout and stderr apart.
    Tty: false,
    HostConfig: {
      NetworkMode: "none",
      ReadonlyRootfs: true,
      Tmpfs: { "/tmp": "rw,nosuid,nodev,size=64m,mode=1777" },
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      Binds: [`${join(packageDir, "packed")}:/pkg:ro`],
    },
  });
  created.push(container);
  await container.start();
  const { StatusCode } = await container.wait();
  const { stdout, stderr } = demux(await container.logs({ stdout: true, stderr: true }));
  await container.remove();
  created.splice(created.indexOf(container), 1);
  const values = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const match = /^(npm|npx|corepack|curl|make|probe)=(.*)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) values.set(match[1], match[2]);
  }
  return { code: StatusCode, values, output: `${stdout}${stderr}` };
}

/** A log without a TTY is frames: 1 byte stream (1 stdout, 2 stderr), 3 zero bytes, a 4-byte length. */
function demux(log: Buffer): { stdout: string; stderr: string } {
  const parts: Record<number, Buffer[]> = { 1: [], 2: [] };
  for (let offset = 0; offset + 8 <= log.length; ) {
    const size = log.readUInt32BE(offset + 4);
    parts[log[offset] ?? 1]?.push(log.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return {
    stdout: Buffer.concat(parts[1] ?? []).toString("utf8"),
    stderr: Buffer.concat(parts[2] ?? []).toString("utf8"),
  };
}

describe.each(images)("the toolchain in the image of %s", (_runtime, image) => {
  it(`runs npm, npx, corepack${CURL === null ? "" : ", curl"}${MAKE === null ? "" : ", make"} and an offline npm install as ${SESSION_USER}`, async () => {
    const { code, values, output } = await runScript(image);
    expect({ code, output }).toMatchObject({ code: 0 });
    expect(values.get("npm")).toBe(NODE_TOOLCHAIN.npm.version);
    expect(values.get("npx")).toBe(NODE_TOOLCHAIN.npm.version);
    expect(values.get("corepack")).toBe(NODE_TOOLCHAIN.corepack.version);
    // This machine's own binaries with their libraries: the same first line as here.
    if (CURL !== null) expect(values.get("curl")).toBe(CURL);
    if (MAKE !== null) expect(values.get("make")).toBe(MAKE);
    expect(values.get("probe")).toBe("installed");
  });
});
