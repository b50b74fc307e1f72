/**
 * A project's `image` (any Docker reference, a registry with a port included) and its
 * `environment: "devcontainer"` as `project create` takes them: it needs the repository
 * (remote_url), names no image of its own, and reaches the host in the project's spec with a setup
 * that the repository's lifecycle commands join even when the project has no steps.
 */
import { describe, expect, it } from "vitest";
import {
  configProblem,
  ProjectConfigSchema,
  projectSpec,
  setupSpec,
} from "../../worker/src/projects/project-config.js";

const config = (fields: Record<string, unknown>) =>
  ProjectConfigSchema.parse({ name: "dc", remote_url: "https://git.example.com/acme/app.git", ...fields });

describe("environment devcontainer", () => {
  it("is consistent with a remote and no image", () => {
    expect(configProblem(config({ environment: "devcontainer" }))).toBeNull();
  });

  it("is refused without a remote, or beside an image or a container type, saying which", () => {
    expect(configProblem(config({ environment: "devcontainer", remote_url: null }))).toMatch(
      /give remote_url/,
    );
    expect(configProblem(config({ environment: "devcontainer", image: "python:3.12" }))).toMatch(
      /give no image or container_type/,
    );
    expect(configProblem(config({ environment: "devcontainer", container_type: "default" }))).toMatch(
      /give no image or container_type/,
    );
  });

  it("accepts no other value", () => {
    expect(ProjectConfigSchema.safeParse({ name: "dc", environment: "dockerfile" }).success).toBe(false);
  });

  it("reaches the host in the spec, with a setup of the project's steps (none, here) and its bound", () => {
    const devcontainer = config({ environment: "devcontainer", setup_timeout_seconds: 120 });
    expect(projectSpec(devcontainer).environment).toBe("devcontainer");
    expect(setupSpec(devcontainer)).toEqual({ steps: [], timeout_ms: 120_000 });
    const plain = config({});
    expect(projectSpec(plain).environment).toBeUndefined();
    expect(setupSpec(plain)).toBeNull();
  });
});

describe("image", () => {
  const accepts = (image: string) => ProjectConfigSchema.safeParse({ name: "img", image }).success;

  it("takes Docker references: a name, a tag, a registry (with its port) and a digest", () => {
    for (const image of [
      "python:3.12",
      "ubuntu",
      "ghcr.io/acme/app:v1.2",
      "127.0.0.1:5000/acme/tiny:1",
      "localhost:5000/tiny",
      `registry.example.com/a/b@sha256:${"a".repeat(64)}`,
    ])
      expect(accepts(image), image).toBe(true);
  });

  it("refuses what is not one", () => {
    for (const image of [
      "Python",
      "a b",
      "http://registry/x",
      "-x",
      "x:",
      "host:99999999/x",
      "python:3.12;rm",
    ])
      expect(accepts(image), image).toBe(false);
  });
});
