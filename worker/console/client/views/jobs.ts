import { canWrite, isAdmin } from "../access.js";
import { callObject } from "../api.js";
import { h, rowButton } from "../dom.js";
import { errorSlot, guarded, messageOf } from "../errors.js";
import { dash, when } from "../format.js";
import { type JsonRecord, list, rec, str } from "../json.js";
import { dataTable } from "../table.js";
import { heading, type View } from "../view.js";

const REFRESH_MS = 3_000;

interface Job {
  job_id: string;
  tool: string;
  project_id: string | null;
  target: string | null;
  status: string;
  progress: string | null;
  error: string | null;
  started_at: string | null;
  ended_at: string | null;
}

function parseJob(r: JsonRecord): Job | null {
  const id = str(r, "job_id");
  if (id === null) return null;
  const error = rec(r, "error");
  return {
    job_id: id,
    tool: str(r, "tool") ?? "?",
    project_id: str(r, "project_id"),
    target: str(r, "target"),
    status: str(r, "status") ?? "unknown",
    progress: str(rec(r, "progress") ?? {}, "message"),
    error: error ? str(error, "message") : null,
    started_at: str(r, "started_at") ?? str(r, "created_at"),
    ended_at: str(r, "ended_at"),
  };
}

/** Cancelling is a write on the job's project, or on the installation for a global job (worker/src/jobs/job-access.ts). */
function mayCancel(job: Job): boolean {
  if (job.status !== "pending" && job.status !== "running") return false;
  return job.target === "project" && job.project_id !== null ? canWrite(job.project_id) : isAdmin();
}

/** Jobs, newest first: long-running calls (container start, exec, spawn, …) and their outcome. */
export const jobsView: View = ({ root, scope }) => {
  const errors = errorSlot();
  const rowSlot = errorSlot();
  const table = dataTable<Job>(
    "Jobs",
    [
      { header: "Job", cell: (job) => h("code", {}, job.job_id) },
      { header: "Tool", cell: (job) => job.tool },
      { header: "Project", cell: (job) => dash(job.project_id) },
      { header: "Status", cell: (job) => (job.error ? `${job.status}: ${job.error}` : job.status) },
      { header: "Progress", cell: (job) => dash(job.progress) },
      { header: "Started", cell: (job) => when(job.started_at) },
      { header: "Ended", cell: (job) => when(job.ended_at) },
      {
        header: "Actions",
        cell: (job) => {
          if (!mayCancel(job)) return "";
          const cancel: HTMLButtonElement = rowButton("Cancel", job.job_id, () => {
            void guarded(rowSlot, async () => {
              await callObject("job", { action: "cancel", job_id: job.job_id });
              loader.poke();
            }, [cancel]);
          });
          return cancel;
        },
      },
    ],
    (job) => job.job_id,
    "No jobs in the last 24 hours.",
  );
  root.append(heading("Jobs"), errors.el, rowSlot.el, table.el);
  const loader = scope.every(REFRESH_MS, async () => {
    try {
      const answer = await callObject("job", { action: "list", limit: 100 });
      if (scope.disposed) return;
      table.update(list(answer, "jobs", parseJob));
      errors.clear();
    } catch (err) {
      if (!scope.disposed) errors.show(messageOf(err));
    }
  });
};
