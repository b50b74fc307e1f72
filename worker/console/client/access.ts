import { isRecord, str, strings } from "./json.js";

/**
 * Who is signed in, read once from the page's `oubliette-principal` meta, and what the UI shows
 * them. Mirrors worker/src/auth/access.ts: controls a person cannot use are left out, not disabled
 * (the server refuses them anyway).
 */
export interface Principal {
  token_id: string;
  scopes: string[];
}

/** Parses `{token_id, scopes}`; null when it is not that. */
export function parsePrincipal(value: unknown): Principal | null {
  if (!isRecord(value)) return null;
  const tokenId = str(value, "token_id");
  if (tokenId === null || !Array.isArray(value.scopes)) return null;
  return { token_id: tokenId, scopes: strings(value, "scopes") };
}

/** The principal the shell was rendered for, or null when the meta is missing or malformed. */
export function readPrincipal(doc: Document = document): Principal | null {
  const raw = doc.querySelector('meta[name="oubliette-principal"]')?.getAttribute("content");
  if (!raw) return null;
  try {
    return parsePrincipal(JSON.parse(raw));
  } catch {
    return null;
  }
}

let current: Principal = { token_id: "", scopes: [] };

export function setPrincipal(principal: Principal): void {
  current = principal;
}

export function principal(): Principal {
  return current;
}

/** `admin`: global writes and the admin tools (hosts, tokens, audit). */
export function isAdmin(): boolean {
  return current.scopes.includes("admin");
}

/** `admin` or `admin:ro`: may read the administration (hosts, tokens, audit; `admin_read` actions). */
export function readsAdministration(): boolean {
  return isAdmin() || current.scopes.includes("admin:ro");
}

/** Writes in a project: `admin` or `project:<id>` (read-only scopes never write). */
export function canWrite(projectId: string | null): boolean {
  if (isAdmin()) return true;
  return projectId !== null && current.scopes.includes(`project:${projectId}`);
}

/** Writes in every one of `projectIds` (a schedule acts on all its targets). */
export function canWriteAll(projectIds: readonly string[]): boolean {
  return projectIds.length > 0 && projectIds.every((id) => canWrite(id));
}
