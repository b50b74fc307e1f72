/**
 * The file changes Codex is about to make, kept by item id: its `item/fileChange/requestApproval`
 * names only the item, whose files and diffs came just before in `item/started` (and
 * `item/fileChange/patchUpdated`). An item is forgotten once completed, and only the latest few
 * are kept.
 */
import { FileChangeHolderSchema, type FileUpdateChange } from "./codex-wire.js";

const KEPT_ITEMS = 32;

export class CodexFileChanges {
  readonly #items = new Map<string, FileUpdateChange[]>();

  /** `item/started`, `item/fileChange/patchUpdated`: keeps a file-change item's changes. */
  remember(params: unknown): void {
    const parsed = FileChangeHolderSchema.safeParse(params);
    if (!parsed.success) return;
    const [id, changes] =
      "item" in parsed.data
        ? [parsed.data.item.id, parsed.data.item.changes]
        : [parsed.data.itemId, parsed.data.changes];
    this.#items.delete(id);
    this.#items.set(id, changes);
    while (this.#items.size > KEPT_ITEMS) {
      const oldest = this.#items.keys().next().value;
      if (oldest === undefined) break;
      this.#items.delete(oldest);
    }
  }

  /** `item/completed`: the item's changes are made (or refused); its approval was answered. */
  forget(params: unknown): void {
    const parsed = FileChangeHolderSchema.safeParse(params);
    if (parsed.success && "item" in parsed.data) this.#items.delete(parsed.data.item.id);
  }

  /** The changes of item `id`, if seen (none when it had no files). */
  of(id: string): FileUpdateChange[] | undefined {
    const changes = this.#items.get(id);
    return changes === undefined || changes.length === 0 ? undefined : changes;
  }
}

/** What a change does to its file, for a person: `Edit a.ts`, `Create a.ts`, `Delete a.ts`, `Move a.ts to b.ts`. */
export function describeChange(change: FileUpdateChange): string {
  switch (change.kind?.type) {
    case "add":
      return `Create ${change.path}`;
    case "delete":
      return `Delete ${change.path}`;
    default:
      return change.kind?.move_path
        ? `Move ${change.path} to ${change.kind.move_path}`
        : `Edit ${change.path}`;
  }
}

/**
 * One change as diff text: a unified diff for an update, the new content for a new file, the old
 * content as removed lines for a deleted one.
 */
function changeText(change: FileUpdateChange): string {
  const diff = change.diff ?? "";
  if (change.kind?.type !== "delete") return diff;
  return diff
    .replace(/\n$/, "")
    .split("\n")
    .map((line) => `-${line}`)
    .join("\n");
}

/** The diff of all the changes: one file's alone, several each under a `*** <what> ***` header. */
export function changesDiff(changes: readonly FileUpdateChange[]): string {
  if (changes.length === 1) return changeText(changes[0] as FileUpdateChange);
  return changes.map((change) => `*** ${describeChange(change)} ***\n${changeText(change)}`).join("\n");
}
