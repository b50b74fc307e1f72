/**
 * A project's `environment: "devcontainer"` as `project create` takes it: it needs the repository
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
