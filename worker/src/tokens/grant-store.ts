import type { Scope } from "../auth/scopes.js";
import { parseScopes, statusOf, type TokenStatus } from "./token-store.js";

/**
 * OAuth grants as principals. The OAuth library keeps a grant's tokens in KV (hashed, its props
 * encrypted); this table is the directory's own record of it, so that a grant is listed, revoked,
 * audited and checked like an API token: by its id (`grt_…`), every few seconds by open streams.
 * `signed_in_as` is the API token the person signed in with: revoking that token revokes this.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  oauth_grant_id TEXT,
  oauth_user_id TEXT NOT NULL,
  issuer TEXT NOT NULL,
  client_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  client_verified INTEGER NOT NULL,
  redirect_uri TEXT NOT NULL,
  scopes TEXT NOT NULL,
  signed_in_as TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  last_refreshed_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS grants_signed_in_as ON grants (signed_in_as);
CREATE INDEX IF NOT EXISTS grants_oauth ON grants (oauth_grant_id);
CREATE TABLE IF NOT EXISTS refresh_uses (
  sha256 TEXT PRIMARY KEY,
  oauth_grant_id TEXT NOT NULL,
  used_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS refresh_uses_at ON refresh_uses (used_at);
`;

export interface GrantRow {
  id: string;
  /** The library's grant id (known once the grant is stored). */
  oauthGrantId: string | null;
  /** The user id the library files the grant under (the signing-in principal's, encoded). */
  oauthUserId: string;
  /** The issuer (origin) the grant was made at: its library instance revokes it. */
  issuer: string;
  clientId: string;
  clientName: string;
  /** A CIMD client (its metadata came from its client_id URL) rather than a self-registered one. */
  clientVerified: boolean;
  redirectUri: string;
  scopes: Scope[];
  signedInAs: string;
  createdAt: number;
  lastUsedAt: number | null;
  lastRefreshedAt: number | null;
  revokedAt: number | null;
}

export function grantStatus(row: GrantRow, now: number): TokenStatus {
  return statusOf({ expiresAt: null, revokedAt: row.revokedAt }, now);
}

function toRow(r: Record<string, SqlStorageValue>): GrantRow {
  const num = (v: SqlStorageValue | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    id: String(r.id),
    oauthGrantId: r.oauth_grant_id === null ? null : String(r.oauth_grant_id),
    oauthUserId: String(r.oauth_user_id),
    issuer: String(r.issuer),
    clientId: String(r.client_id),
    clientName: String(r.client_name),
    clientVerified: Number(r.client_verified) === 1,
    redirectUri: String(r.redirect_uri),
    scopes: parseScopes(r.scopes),
    signedInAs: String(r.signed_in_as),
    createdAt: Number(r.created_at),
    lastUsedAt: num(r.last_used_at),
    lastRefreshedAt: num(r.last_refreshed_at),
    revokedAt: num(r.revoked_at),
  };
}

/** Refresh-token uses are remembered this long (the library's refresh-token lifetime). */
export const REFRESH_USE_RETAIN_MS = 30 * 24 * 3_600_000;

export class GrantStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  insert(row: GrantRow): void {
    this.#sql.exec(
      `INSERT INTO grants (id, oauth_grant_id, oauth_user_id, issuer, client_id, client_name, client_verified,
         redirect_uri, scopes, signed_in_as, created_at, last_used_at, last_refreshed_at, revoked_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)`,
      row.id,
      row.oauthGrantId,
      row.oauthUserId,
      row.issuer,
      row.clientId,
      row.clientName,
      row.clientVerified ? 1 : 0,
      row.redirectUri,
      JSON.stringify(row.scopes),
      row.signedInAs,
      row.createdAt,
    );
  }

  byId(id: string): GrantRow | null {
    const r = this.#sql.exec("SELECT * FROM grants WHERE id = ?", id).toArray()[0];
    return r ? toRow(r) : null;
  }

  byOauthGrant(oauthGrantId: string): GrantRow[] {
    return this.#sql.exec("SELECT * FROM grants WHERE oauth_grant_id = ?", oauthGrantId).toArray().map(toRow);
  }

  list(): GrantRow[] {
    return this.#sql.exec("SELECT * FROM grants ORDER BY created_at, id").toArray().map(toRow);
  }

  /** Active grants made by signing in with `tokenId`. */
  activeSignedInAs(tokenId: string): GrantRow[] {
    return this.#sql
      .exec("SELECT * FROM grants WHERE signed_in_as = ? AND revoked_at IS NULL", tokenId)
      .toArray()
      .map(toRow);
  }

  setOauthGrant(id: string, oauthGrantId: string): void {
    this.#sql.exec("UPDATE grants SET oauth_grant_id = ? WHERE id = ?", oauthGrantId, id);
  }

  revoke(id: string, now: number): void {
    this.#sql.exec("UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", now, id);
  }

  touch(id: string, now: number): void {
    this.#sql.exec("UPDATE grants SET last_used_at = ? WHERE id = ?", now, id);
  }

  refreshed(oauthGrantId: string, now: number): void {
    this.#sql.exec("UPDATE grants SET last_refreshed_at = ? WHERE oauth_grant_id = ?", now, oauthGrantId);
  }

  /** Notes a refresh token's use; false when it was used before (a replay). */
  useRefreshToken(sha256: string, oauthGrantId: string, now: number): boolean {
    this.#sql.exec("DELETE FROM refresh_uses WHERE used_at < ?", now - REFRESH_USE_RETAIN_MS);
    const seen = this.#sql.exec("SELECT 1 FROM refresh_uses WHERE sha256 = ?", sha256).toArray().length > 0;
    if (seen) return false;
    this.#sql.exec(
      "INSERT INTO refresh_uses (sha256, oauth_grant_id, used_at) VALUES (?, ?, ?)",
      sha256,
      oauthGrantId,
      now,
    );
    return true;
  }
}
