/** Ids the tool definitions' examples use (well-formed, never real). */
export const EXAMPLE_PROJECT = "prj_0123456789abcdef01234567";
export const EXAMPLE_SESSION = "ses_0123456789abcdef01234567";
export const EXAMPLE_SCHEDULE = "sch_0123456789abcdef01234567";
export const EXAMPLE_JOB = "job_0123456789abcdef01234567";
