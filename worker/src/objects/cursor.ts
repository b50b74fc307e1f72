import { AppError } from "../errors.js";

/**
 * Page cursors of listings ordered by (created_at, id): opaque to callers, the position of the
 * last item of the page before.
 */
export interface CursorPosition {
  createdAt: number;
  id: string;
}

export function encodeCursor(createdAt: number, id: string): string {
  return btoa(JSON.stringify([createdAt, id]));
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const [createdAt, id] = JSON.parse(atob(cursor)) as unknown[];
    if (typeof createdAt === "number" && typeof id === "string") return { createdAt, id };
  } catch {
    // fall through
  }
  throw new AppError("invalid_arguments", "cursor is not one this listing returned");
}
