/**
 * The agent images the globalSetup built (test/support/docker-setup.ts), against the real engine:
 * each holds its pinned CLI where the catalogue's `command` says, the CLI runs as uid 1000 in a
 * container with no network and prints its pinned version, the default user's HOME is writable,
 * and ensuring the images again rebuilds nothing.
 */
import type { IncomingMessage } from "node:http";
import Dockerode from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  CLI_RUNTIME_NAMES,
  type CliRuntimeName,
  programPath,
} from "../../host-agent/src/images/agent-cli.js";
import {
  agentCliImageTag,
  agentImageTag,
  ensureAgentImages,
} from "../../host-agent/src/images/agent-images.js";
import { CLI_RUNTIMES } from "../../protocol/agent-runtimes.js";
import { bundles } from "../../scripts/build.js";
import { dockerContext } from "../support/docker-context.js";

const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });
const agentImages = dockerContext().agentImages;
const built = CLI_RUNTIME_NAMES.filter((runtime) => agentImages[runtime] !== undefined);
const created: Dockerode.Container[] = [];

afterAll(async () => {
  await Promise.all(created.map((container) => container.remove({ force: true }).catch(() => {})));
});

/** What the engine says of a path in a container (header of HEAD /containers/{id}/archive). */
const PathStatSchema = z.object({ name: z.string(), size: z.number(), mode: z.number() });

/** A container of `image` that is never started, with no network. */
async function createIdle(image: string, cmd: string[] = ["true"]): Promise<Dockerode.Container> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: cmd,
    HostConfig: { NetworkMode: "none" },
  });
  created.push(container);
  return container;
}

/** Runs `cmd` in `image` with no network (as `user` when given); its exit code and output. */
async function run(image: string, cmd: string[], user?: string): Promise<{ code: number; output: string }> {
  const container = await docker.createContainer({
    Image: image,
    Cmd: cmd,
    User: user,
    Tty: true,
    HostConfig: { NetworkMode: "none" },
  });
  created.push(container);
  await container.start();
  const { StatusCode } = await container.wait();
  const output = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
  await container.remove();
  created.splice(created.indexOf(container), 1);
  return { code: StatusCode, output };
}

describe.each(CLI_RUNTIME_NAMES)("agent image of %s", (runtime: CliRuntimeName) => {
  const image = agentImages[runtime];
  const cli = CLI_RUNTIMES[runtime];

  it.skipIf(image === undefined)("is the tag agentImageTag names", () => {
    expect(image).toBe(agentImageTag(runtime));
  });

  it.skipIf(image === undefined)("holds the CLI at its command's path, executable by everyone", async () => {
    const container = await createIdle(image ?? "");
    const response = (await container.infoArchive({ path: programPath(cli) })) as IncomingMessage;
    response.resume();
    const header = response.headers["x-docker-container-path-stat"];
    const stat = PathStatSchema.parse(JSON.parse(Buffer.from(String(header), "base64").toString("utf8")));
    expect(stat.size).toBeGreaterThan(0);
    expect(stat.mode & 0o444).toBe(0o444);
    if (cli.command[0] !== "node") expect(stat.mode & 0o111).toBe(0o111);
  });

  it.skipIf(image === undefined)(
    "runs --version as uid 1000 with no network, printing the pinned version",
    async () => {
      const { code, output } = await run(image ?? "", [...cli.command, "--version"], "1000:1000");
      expect(output).toContain(cli.version);
      expect(code).toBe(0);
    },
  );

  it.skipIf(image === undefined)("runs as uid 1000 by default, with a writable HOME", async () => {
    const probe =
      "const fs=require('node:fs'),os=require('node:os');fs.writeFileSync(os.homedir()+'/probe','x');" +
      "process.stdout.write('uid '+process.getuid()+' '+os.homedir()+'\\n')";
    const { code, output } = await run(image ?? "", ["node", "-e", probe]);
    expect(output).toContain("uid 1000 /home/droid");
    expect(code).toBe(0);
  });
});

it.skipIf(built.length === 0)("a second ensure rebuilds nothing", async () => {
  const ids = async () =>
    Promise.all(
      built
        .flatMap((runtime) => [agentImageTag(runtime), agentCliImageTag(runtime)])
        .map(async (tag) => (await docker.getImage(tag).inspect()).Id),
    );
  const before = await ids();
  const lines: string[] = [];
  const tags = await ensureAgentImages(docker, bundles, built, (line) => lines.push(line));
  expect(Object.keys(tags).sort()).toEqual([...built].sort());
  expect(await ids()).toEqual(before);
  expect(lines.filter((line) => /building|downloading|sending/.test(line))).toEqual([]);
});
