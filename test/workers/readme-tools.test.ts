import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import { toolDefinitions } from "../../worker/src/tools/catalog.js";

/** The README's tool table, as rows of [tool, actions, access]. */
function readmeRows(): string[][] {
  const section = readme.slice(readme.indexOf("## Using it"), readme.indexOf("**Scopes.**"));
  let tool = "";
  return section
    .split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| tool") && !line.startsWith("| ---"))
    .map((line) => {
      const cells = line.split("|").map((c) => c.trim());
      if (cells[1]) tool = cells[1];
      return [tool, cells[2] ?? "", cells[3] ?? ""];
    });
}

describe("the README's tool table", () => {
  const rows = readmeRows();
  const cases = toolDefinitions.flatMap((tool) =>
    Object.entries(tool.actions).map(
      ([name, def]) => [tool.name, tool.single === undefined ? name : "—", def] as const,
    ),
  );

  it.each(cases)("lists %s %s with its access", (tool, action, def) => {
    const row = rows.find(
      ([t, actions]) =>
        t?.split(", ").some((n) => n === `\`${tool}\``) &&
        (action === "—" ? actions === "—" : actions?.includes(`\`${action}\``)),
    );
    expect(row, `no README row for ${tool} ${action}`).toBeDefined();
    const access =
      def.access === "admin"
        ? "admin"
        : def.access === "admin_read"
          ? "admin read"
          : `${def.target} ${def.access}`;
    expect(row?.[2]).toBe(access);
  });
});
