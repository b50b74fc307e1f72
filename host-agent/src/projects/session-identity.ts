/**
 * Who a session's processes are in its project's container, and its private places there: a uid
 * of its own (allocated from the project's record, stable across host-agent restarts), its
 * workspace's group, and a home only that uid may enter. Under the process runtime a session has
 * none of these (it is this user; nothing is kept apart, and that runtime says so).
 */
import { mkdir, rm } from "node:fs/promises";
import { sessionUid } from "../../../protocol/container-layout.js";
import { claim, type OwnershipMode, ownerOf } from "./ownership.js";
import { EXEC_HOME, type ProjectPaths } from "./project-paths.js";
import { sessionIndex } from "./project-record.js";
import type { RecordStore } from "./record-store.js";

export interface SessionIdentity {
  uid: number | null;
  gid: number | null;
}

export interface SessionIdentitiesOptions {
  paths: ProjectPaths;
  record: RecordStore;
  ownership: OwnershipMode;
  /** Whether sessions run as uids of their own here (Docker). */
  separate: boolean;
}

export class SessionIdentities {
  readonly #o: SessionIdentitiesOptions;

  constructor(options: SessionIdentitiesOptions) {
    this.#o = options;
  }

  /** The session's uid (allocated on first use) with `gid`, its workspace's group. */
  async assign(sessionId: string, gid: number): Promise<SessionIdentity> {
    if (!this.#o.separate) return { uid: null, gid: null };
    const index = await this.#o.record.update((record) => sessionIndex(record, sessionId));
    return { uid: sessionUid(index), gid };
  }

  /** Makes the directory of the homes (enterable, not listable, by the sessions) and the exec identity's home. */
  async prepareHomes(): Promise<void> {
    await mkdir(this.#o.paths.homes, { recursive: true });
    await claim(this.#o.paths.homes, ownerOf(this.#o.ownership, { kind: "homes" }));
    await mkdir(this.#o.paths.execHome, { recursive: true });
    await claim(this.#o.paths.execHome, ownerOf(this.#o.ownership, { kind: "exec-home" }));
  }

  /** Where `container exec` and the setup have their home, as the workload sees it under `homesRoot`. */
  execHome(homesRoot: string): string {
    return `${homesRoot}/${EXEC_HOME}`;
  }

  /** Makes the session's home: its uid's alone (a non-root host leaves that to the session itself). */
  async makeHome(sessionId: string, identity: SessionIdentity): Promise<void> {
    const { paths, ownership } = this.#o;
    await this.prepareHomes();
    if (identity.uid === null || identity.gid === null || ownership !== "root") return;
    const home = paths.home(sessionId);
    await mkdir(home, { recursive: true });
    await claim(home, ownerOf(ownership, { kind: "home", uid: identity.uid, gid: identity.gid }));
  }

  /** The session is over here: its home goes, and its uid may be handed out again. */
  async release(sessionId: string): Promise<void> {
    // A non-root host cannot remove a home its session made for itself; the volume keeps it.
    await rm(this.#o.paths.home(sessionId), { recursive: true, force: true }).catch(() => {});
    if (!this.#o.separate) return;
    await this.#o.record.update((record) => {
      delete record.sessions[sessionId];
    });
  }
}
