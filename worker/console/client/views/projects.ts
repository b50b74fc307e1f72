import { isAdmin } from "../access.js";
import { button, h, link, replace } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { when } from "../format.js";
import { listProjects, type ProjectEntry } from "../models.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";
import { newProjectForm } from "./project-form.js";

/** Every project the person may read; admins may create one (a global write). */
export const projectsView: View = ({ root, navigate }) => {
  const errors = errorSlot();
  const table = dataTable<ProjectEntry>(
    "Projects",
    [
      { header: "Name", cell: (p) => link(p.name, `#/projects/${p.project_id}`) },
      { header: "Id", cell: (p) => h("code", {}, p.project_id) },
      { header: "Created", cell: (p) => when(p.created_at) },
    ],
    (p) => p.project_id,
    "No projects yet.",
  );
  root.append(heading("Projects"));
  if (isAdmin()) {
    const slot = errorSlot();
    const place = h("div", { class: "reveal" });
    const reveal: HTMLButtonElement = button("New project", () => {
      void guarded(slot, async () => {
        const form = await newProjectForm((id) => navigate(`#/projects/${id}`));
        replace(place, form);
        reveal.hidden = true;
        form.querySelector("input")?.focus();
      }, [reveal]);
    });
    root.append(h("div", { class: "actions" }, reveal), slot.el, place);
  }
  root.append(errors.el, table.el);
  listProjects().then(
    (projects) => table.update(projects),
    (err: unknown) => errors.show(messageOf(err)),
  );
};
