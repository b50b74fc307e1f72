import { z } from "zod";
import { SessionIdSchema } from "../../../protocol/ids.js";
import { type Scope, ScopeSchema } from "../auth/scopes.js";
import { AppError } from "../errors.js";
import { decodeRecord, type RecordFormat } from "../objects/stored-record.js";

/**
 * The token directory's table. A token is held only as its SHA-256 (`sha256` is UNIQUE, so a
 * presented token is found by its hash through the index, never by a scan), plus a short prefix
 * of the plain token so a person can tell tokens apart in a listing. `session_id` binds a key the
 * Worker minted for a session's droid to that session: it is accepted only on that session's path.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY,
  sha256 TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,
  host_id TEXT,
  prefix TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  last_used_at INTEGER,
  session_id TEXT
);
CREATE INDEX IF NOT EXISTS tokens_host ON tokens (host_id);
`;

export type TokenKind = "caller" | "host";
export type TokenStatus = "active" | "expired" | "revoked";

export interface TokenRow {
  id: string;
  sha256: string;
  kind: TokenKind;
  name: string;
  scopes: Scope[];
  hostId: string | null;
  prefix: string;
  createdAt: number;
  createdBy: string;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /** The session a key minted for its droid belongs to; null for every other token. */
  sessionId: string | null;
}

export function statusOf(row: Pick<TokenRow, "expiresAt" | "revokedAt">, now: number): TokenStatus {
  if (row.revokedAt !== null) return "revoked";
  if (row.expiresAt !== null && row.expiresAt <= now) return "expired";
  return "active";
}

const ScopesSchema = z.array(ScopeSchema);

/** A token's or grant's scopes as stored (bare JSON: version 0). */
const STORED_SCOPES = { kind: "scopes", version: 0, schema: ScopesSchema } satisfies RecordFormat<
  typeof ScopesSchema
>;

/** A row's scopes, parsed (a row outlives the code that wrote it); an internal error if they do not. */
export function parseScopes(value: SqlStorageValue | undefined): Scope[] {
  return decodeRecord(STORED_SCOPES, String(value));
}

const BoundSessionSchema = SessionIdSchema.nullable();

/** A row's session binding, parsed: a value that is not a session id must never loosen or move it. */
function parseBoundSession(value: SqlStorageValue | undefined): string | null {
  const parsed = BoundSessionSchema.safeParse(value ?? null);
  if (!parsed.success) throw new AppError("internal", "a stored token's session_id is not a session id");
  return parsed.data;
}

function toRow(r: Record<string, SqlStorageValue>): TokenRow {
  const num = (v: SqlStorageValue | undefined) => (v === null || v === undefined ? null : Number(v));
  return {
    id: String(r.id),
    sha256: String(r.sha256),
    kind: r.kind === "host" ? "host" : "caller",
    name: String(r.name),
    scopes: parseScopes(r.scopes),
    hostId: r.host_id === null ? null : String(r.host_id),
    prefix: String(r.prefix),
    createdAt: Number(r.created_at),
    createdBy: String(r.created_by),
    expiresAt: num(r.expires_at),
    revokedAt: num(r.revoked_at),
    lastUsedAt: num(r.last_used_at),
    sessionId: parseBoundSession(r.session_id),
  };
}

export class TokenStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
    // Tables made before session keys were bound to their session get the column (no row is bound).
    const columns = sql.exec("PRAGMA table_info(tokens)").toArray();
    if (!columns.some((c) => c.name === "session_id"))
      sql.exec("ALTER TABLE tokens ADD COLUMN session_id TEXT");
  }

  insert(row: TokenRow): void {
    this.#sql.exec(
      `INSERT INTO tokens (id, sha256, kind, name, scopes, host_id, prefix, created_at, created_by, expires_at, revoked_at, last_used_at, session_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)`,
      row.id,
      row.sha256,
      row.kind,
      row.name,
      JSON.stringify(row.scopes),
      row.hostId,
      row.prefix,
      row.createdAt,
      row.createdBy,
      row.expiresAt,
      row.sessionId,
    );
  }

  byHash(sha256: string): TokenRow | null {
    const r = this.#sql.exec("SELECT * FROM tokens WHERE sha256 = ?", sha256).toArray()[0];
    return r ? toRow(r) : null;
  }

  byId(id: string): TokenRow | null {
    const r = this.#sql.exec("SELECT * FROM tokens WHERE id = ?", id).toArray()[0];
    return r ? toRow(r) : null;
  }

  /** Active host tokens of a host (one per host is the rule; this finds the ones to replace). */
  activeForHost(hostId: string, now: number): TokenRow[] {
    return this.#sql
      .exec("SELECT * FROM tokens WHERE host_id = ? AND revoked_at IS NULL", hostId)
      .toArray()
      .map(toRow)
      .filter((row) => statusOf(row, now) === "active");
  }

  list(kind: TokenKind | null): TokenRow[] {
    const rows =
      kind === null
        ? this.#sql.exec("SELECT * FROM tokens ORDER BY created_at, id")
        : this.#sql.exec("SELECT * FROM tokens WHERE kind = ? ORDER BY created_at, id", kind);
    return rows.toArray().map(toRow);
  }

  /** Tokens with a scope on the project (for revoking them when it is deleted). */
  withProjectScope(projectId: string): TokenRow[] {
    return this.list("caller").filter((row) =>
      row.scopes.some((s) => s === `project:${projectId}` || s === `project:${projectId}:ro`),
    );
  }

  revoke(id: string, now: number): void {
    this.#sql.exec("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", now, id);
  }

  touch(id: string, now: number): void {
    this.#sql.exec("UPDATE tokens SET last_used_at = ? WHERE id = ?", now, id);
  }
}
