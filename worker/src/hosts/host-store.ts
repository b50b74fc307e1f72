/**
 * The host registry's tables: placements (which host runs which session, and whether its start
 * was confirmed), projects' hosts, hosts that went missing (since when, for the grace period),
 * hosts lost (missing past it: listed, their projects kept, until revoked) and hosts revoked.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS placements (session_id TEXT PRIMARY KEY, host_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS placements_host ON placements (host_id);
CREATE TABLE IF NOT EXISTS missing_hosts (host_id TEXT PRIMARY KEY, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS project_hosts (project_id TEXT PRIMARY KEY, host_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS project_hosts_host ON project_hosts (host_id);
CREATE TABLE IF NOT EXISTS revoked_host_tokens (token_id TEXT PRIMARY KEY, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS drained_hosts (host_id TEXT PRIMARY KEY, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS lost_hosts (host_id TEXT PRIMARY KEY, missing_since INTEGER NOT NULL, lost_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS revoked_hosts (host_id TEXT PRIMARY KEY, since INTEGER NOT NULL);
`;

export class HostStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
    // Placements of an earlier version have no state; they were all confirmed starts.
    try {
      sql.exec("ALTER TABLE placements ADD COLUMN state TEXT NOT NULL DEFAULT 'running'");
    } catch {
      // the column exists
    }
  }

  /** Records a placement whose start is not confirmed yet. */
  place(sessionId: string, hostId: string): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO placements (session_id, host_id, state) VALUES (?, ?, 'starting')",
      sessionId,
      hostId,
    );
  }

  markRunning(sessionId: string): void {
    this.#sql.exec("UPDATE placements SET state = 'running' WHERE session_id = ?", sessionId);
  }

  release(sessionId: string): void {
    this.#sql.exec("DELETE FROM placements WHERE session_id = ?", sessionId);
  }

  placement(sessionId: string): string | null {
    const row = this.#sql.exec("SELECT host_id FROM placements WHERE session_id = ?", sessionId).toArray()[0];
    return row ? String(row.host_id) : null;
  }

  /** Sessions placed on a host (starting or running). */
  load(hostId: string): number {
    return Number(this.#sql.exec("SELECT COUNT(*) AS n FROM placements WHERE host_id = ?", hostId).one().n);
  }

  sessionsOn(hostId: string): string[] {
    return this.#sql
      .exec("SELECT session_id FROM placements WHERE host_id = ?", hostId)
      .toArray()
      .map((r) => String(r.session_id));
  }

  /** Sessions whose start the host confirmed. */
  runningOn(hostId: string): string[] {
    return this.#sql
      .exec("SELECT session_id FROM placements WHERE host_id = ? AND state = 'running'", hostId)
      .toArray()
      .map((r) => String(r.session_id));
  }

  placedHosts(): string[] {
    return this.#sql
      .exec("SELECT DISTINCT host_id FROM placements")
      .toArray()
      .map((r) => String(r.host_id));
  }

  hasPlacements(): boolean {
    return this.#sql.exec("SELECT 1 FROM placements LIMIT 1").toArray().length > 0;
  }

  /** Notes that a host is not connected (keeping the earliest time it was first missed). */
  hostMissing(hostId: string, now: number): void {
    this.#sql.exec("INSERT OR IGNORE INTO missing_hosts (host_id, since) VALUES (?, ?)", hostId, now);
  }

  /** The host is connected (again): not missing, not lost, and (with a new token) not revoked. */
  hostBack(hostId: string): void {
    this.forgetHost(hostId);
    this.#sql.exec("DELETE FROM revoked_hosts WHERE host_id = ?", hostId);
  }

  /** Neither missing nor lost any more (it is back, or revoked: no longer listed). */
  forgetHost(hostId: string): void {
    this.#sql.exec("DELETE FROM missing_hosts WHERE host_id = ?", hostId);
    this.#sql.exec("DELETE FROM lost_hosts WHERE host_id = ?", hostId);
  }

  /** Missing past the grace period: its sessions were ended; it stays listed, with its projects. */
  markLost(hostId: string, missingSince: number, now: number): void {
    this.#sql.exec("DELETE FROM missing_hosts WHERE host_id = ?", hostId);
    this.#sql.exec(
      "INSERT OR REPLACE INTO lost_hosts (host_id, missing_since, lost_at) VALUES (?, ?, ?)",
      hostId,
      missingSince,
      now,
    );
  }

  lostHosts(): { hostId: string; missingSince: number; lostAt: number }[] {
    return this.#sql
      .exec("SELECT host_id, missing_since, lost_at FROM lost_hosts")
      .toArray()
      .map((r) => ({
        hostId: String(r.host_id),
        missingSince: Number(r.missing_since),
        lostAt: Number(r.lost_at),
      }));
  }

  lostAt(hostId: string): number | null {
    const row = this.#sql.exec("SELECT lost_at FROM lost_hosts WHERE host_id = ?", hostId).toArray()[0];
    return row ? Number(row.lost_at) : null;
  }

  /** Whether the registry has anything of this host: placements, projects, or it is missing or lost. */
  knowsHost(hostId: string): boolean {
    const row = this.#sql
      .exec(
        `SELECT 1 FROM placements WHERE host_id = ?1 UNION ALL SELECT 1 FROM project_hosts WHERE host_id = ?1
         UNION ALL SELECT 1 FROM missing_hosts WHERE host_id = ?1 UNION ALL SELECT 1 FROM lost_hosts WHERE host_id = ?1 LIMIT 1`,
        hostId,
      )
      .toArray();
    return row.length > 0;
  }

  /** An operator revoked the host (`host revoke`): no longer listed once its sessions are over. */
  setHostRevoked(hostId: string, now: number): void {
    this.#sql.exec("INSERT OR IGNORE INTO revoked_hosts (host_id, since) VALUES (?, ?)", hostId, now);
  }

  hostRevoked(hostId: string): boolean {
    return this.#sql.exec("SELECT 1 FROM revoked_hosts WHERE host_id = ?", hostId).toArray().length > 0;
  }

  /** The host a project lives on (its container and workspaces): sticky once chosen. */
  projectHost(projectId: string): string | null {
    const row = this.#sql
      .exec("SELECT host_id FROM project_hosts WHERE project_id = ?", projectId)
      .toArray()[0];
    return row ? String(row.host_id) : null;
  }

  placeProject(projectId: string, hostId: string): void {
    this.#sql.exec(
      "INSERT OR REPLACE INTO project_hosts (project_id, host_id) VALUES (?, ?)",
      projectId,
      hostId,
    );
  }

  forgetProject(projectId: string): void {
    this.#sql.exec("DELETE FROM project_hosts WHERE project_id = ?", projectId);
  }

  projectsOn(hostId: string): string[] {
    return this.#sql
      .exec("SELECT project_id FROM project_hosts WHERE host_id = ?", hostId)
      .toArray()
      .map((r) => String(r.project_id));
  }

  /**
   * Host tokens revoked here: refused at once, even by an isolate whose token cache has not
   * caught up yet (a cut-off host reconnects within the cache's lifetime otherwise).
   */
  revokeTokens(tokenIds: string[], now: number): void {
    for (const id of tokenIds)
      this.#sql.exec("INSERT OR IGNORE INTO revoked_host_tokens (token_id, since) VALUES (?, ?)", id, now);
  }

  isRevoked(tokenId: string): boolean {
    return (
      this.#sql.exec("SELECT 1 FROM revoked_host_tokens WHERE token_id = ?", tokenId).toArray().length > 0
    );
  }

  /** Drained hosts get no new placements; their running sessions finish. */
  setDrained(hostId: string, drained: boolean, now: number): void {
    if (drained)
      this.#sql.exec("INSERT OR IGNORE INTO drained_hosts (host_id, since) VALUES (?, ?)", hostId, now);
    else this.#sql.exec("DELETE FROM drained_hosts WHERE host_id = ?", hostId);
  }

  drainedSince(hostId: string): number | null {
    const row = this.#sql.exec("SELECT since FROM drained_hosts WHERE host_id = ?", hostId).toArray()[0];
    return row ? Number(row.since) : null;
  }

  missingHosts(): { hostId: string; missingSince: number }[] {
    return this.#sql
      .exec("SELECT host_id, since FROM missing_hosts")
      .toArray()
      .map((r) => ({ hostId: String(r.host_id), missingSince: Number(r.since) }));
  }
}
