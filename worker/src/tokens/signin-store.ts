/**
 * Browser sign-ins to the authorization page: a person proved who they are once (with an API
 * token they hold); the browser then carries a random session id in an HttpOnly cookie, kept here
 * only as its SHA-256, with the principal it stands for and when it ends.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS signins (
  sha256 TEXT PRIMARY KEY,
  token_id TEXT NOT NULL,
  issued INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS signins_expiry ON signins (expires_at);
`;

export interface SigninRow {
  tokenId: string;
  /** The token came from the directory (revocable), not the configuration. */
  issued: boolean;
  expiresAt: number;
}

export class SigninStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec(SCHEMA);
  }

  insert(sha256: string, row: SigninRow, now: number): void {
    this.#sql.exec("DELETE FROM signins WHERE expires_at <= ?", now);
    this.#sql.exec(
      "INSERT INTO signins (sha256, token_id, issued, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
      sha256,
      row.tokenId,
      row.issued ? 1 : 0,
      now,
      row.expiresAt,
    );
  }

  get(sha256: string, now: number): SigninRow | null {
    const r = this.#sql
      .exec("SELECT * FROM signins WHERE sha256 = ? AND expires_at > ?", sha256, now)
      .toArray()[0];
    return r
      ? { tokenId: String(r.token_id), issued: Number(r.issued) === 1, expiresAt: Number(r.expires_at) }
      : null;
  }

  remove(sha256: string): void {
    this.#sql.exec("DELETE FROM signins WHERE sha256 = ?", sha256);
  }

  /** Ends every sign-in made with a token (it was revoked). */
  removeFor(tokenId: string): void {
    this.#sql.exec("DELETE FROM signins WHERE token_id = ?", tokenId);
  }
}
