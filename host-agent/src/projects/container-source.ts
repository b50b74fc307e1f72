/**
 * What a project's container is made from, remembered in the project's record:
 * - its image: the project's, the repository's devcontainer.json's, or its agent runtime's; once
 *   a container was made from an image that is not ours, the project is pinned to that image's
 *   id, so a container made again runs the same bytes until `image_rebuild` lets the pin go;
 * - for environment "devcontainer", the default workspace's devcontainer.json, read (as data)
 *   when the container is made: its image and environment, and its lifecycle commands, which go
 *   before the project's setup steps in every workspace.
 */
import type { Logger } from "../../../lib/log.js";
import { agentImageRef } from "../../../protocol/agent-runtimes.js";
import { DEVCONTAINER_PATHS, type DevcontainerEnvironment } from "../../../protocol/devcontainer.js";
import type { ProjectSpec } from "../../../protocol/project.js";
import type { SetupSpec } from "../../../protocol/setup.js";
import { DevcontainerError } from "../devcontainer/parse-devcontainer.js";
import { readDevcontainer } from "../devcontainer/read-devcontainer.js";
import { HostError } from "./errors.js";
import type { RecordStore } from "./record-store.js";

/** A setup's bound when only a devcontainer.json's lifecycle commands make it (the project's default). */
const DEFAULT_SETUP_TIMEOUT_MS = 600_000;

/** The image a container is to be made from: its reference, and the id the project is pinned to. */
export interface ImageChoice {
  ref: string | undefined;
  pinned: string | undefined;
}

export class ContainerSource {
  readonly #record: RecordStore;
  /** The default workspace on this host (where the repository's devcontainer.json is). */
  readonly #workspaceDir: string;
  readonly #log: Logger;

  constructor(record: RecordStore, workspaceDir: string, log: Logger) {
    this.#record = record;
    this.#workspaceDir = workspaceDir;
    this.#log = log;
  }

  /**
   * The devcontainer.json a "devcontainer" project is made from, read now and remembered (what an
   * agent later writes into the file changes nothing until the container is made again); null for
   * another project; refused, saying why, when it is missing or unusable.
   */
  async environment(spec: ProjectSpec): Promise<DevcontainerEnvironment | null> {
    if (spec.environment !== "devcontainer") return null;
    const found = await readDevcontainer(this.#workspaceDir).catch((error: unknown) => {
      if (error instanceof DevcontainerError)
        throw new HostError("invalid", `the repository's devcontainer.json cannot be used: ${error.message}`);
      throw error;
    });
    if (found === null) {
      throw new HostError(
        "invalid",
        `the project's environment is devcontainer, and its repository has neither ${DEVCONTAINER_PATHS.join(" nor ")}`,
      );
    }
    await this.#record.update((record) => {
      record.devcontainer = found;
    });
    if (found.warning !== undefined) this.#log.warn({ not_honoured: found.not_honoured }, found.warning);
    return found;
  }

  /** The image for `spec` (without one of its own, its agent runtime's), and the id it is pinned to. */
  async image(spec: ProjectSpec, environment: DevcontainerEnvironment | null): Promise<ImageChoice> {
    const ref = environment?.image ?? spec.image ?? (spec.agent ? agentImageRef(spec.agent) : undefined);
    const known = (await this.#record.read()).image;
    return { ref, pinned: ref !== undefined && known?.ref === ref ? known.id : undefined };
  }

  /** A container was made from `made` for `choice`: an image not ours pins the project to it. */
  async made(choice: ImageChoice, made: { id: string; ours: boolean } | undefined): Promise<void> {
    const { ref, pinned } = choice;
    if (ref === undefined || made === undefined || made.ours || made.id === pinned) return;
    await this.#record.update((record) => {
      record.image = { ref, id: made.id };
    });
  }

  /** The next container takes the image its reference names now (`image_rebuild`). */
  async unpin(): Promise<void> {
    await this.#record.update((record) => {
      delete record.image;
    });
  }

  /** The warning of the remembered devcontainer.json (what it asked that was not given), if any. */
  async warning(): Promise<string | undefined> {
    return (await this.#record.read()).devcontainer?.warning;
  }

  /**
   * The setup a workspace runs: the devcontainer.json's lifecycle commands before the project's
   * own steps; undefined when there are none at all.
   */
  async setup(setup: SetupSpec | undefined): Promise<SetupSpec | undefined> {
    const lifecycle = (await this.#record.read()).devcontainer?.setup ?? [];
    if (lifecycle.length === 0) return setup !== undefined && setup.steps.length > 0 ? setup : undefined;
    return {
      steps: [...lifecycle, ...(setup?.steps ?? [])],
      timeout_ms: setup?.timeout_ms ?? DEFAULT_SETUP_TIMEOUT_MS,
    };
  }
}
