import { type Child, h, replace } from "./dom.js";
import { compact } from "./json.js";

/**
 * The one table of the console: a labelled `<table>` whose rows are keyed, so a refresh every
 * few seconds rebuilds only rows whose data changed (links and buttons a person is about to
 * click stay the same elements).
 */
export interface Column<T> {
  header: string;
  cell(row: T): Child;
  /** Re-rendered on every update even when the row's data is unchanged (an age, say). */
  live?: boolean;
}

export interface DataTable<T> {
  /** The table with its wrapper (scrolls sideways on narrow screens) and its empty note. */
  readonly el: HTMLElement;
  update(rows: readonly T[]): void;
}

export function dataTable<T>(
  label: string,
  columns: readonly Column<T>[],
  key: (row: T) => string,
  empty = "Nothing here yet.",
): DataTable<T> {
  const tbody = h("tbody");
  const table = h(
    "table",
    { "aria-label": label },
    h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c.header)))),
    tbody,
  );
  const note = h("p", { class: "empty", hidden: true }, empty);
  const built = new Map<string, { tr: HTMLTableRowElement; signature: string }>();
  const update = (rows: readonly T[]) => {
    const seen = new Set<string>();
    let position = 0;
    for (const row of rows) {
      const id = key(row);
      if (seen.has(id)) continue;
      seen.add(id);
      const signature = compact(row);
      let entry = built.get(id);
      if (!entry || entry.signature !== signature) {
        const tr = h("tr", {}, ...columns.map((c) => h("td", {}, c.cell(row))));
        if (entry) entry.tr.replaceWith(tr);
        entry = { tr, signature };
        built.set(id, entry);
      } else {
        columns.forEach((c, i) => {
          const td = entry?.tr.cells[i];
          if (c.live && td) replace(td, c.cell(row));
        });
      }
      const at = tbody.children[position];
      if (at !== entry.tr) tbody.insertBefore(entry.tr, at ?? null);
      position += 1;
    }
    for (const [id, entry] of built) {
      if (seen.has(id)) continue;
      entry.tr.remove();
      built.delete(id);
    }
    note.hidden = seen.size > 0;
  };
  update([]);
  return { el: h("div", { class: "table-wrap" }, table, note), update };
}
