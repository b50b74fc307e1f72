import { Cron } from "croner";
import { AppError } from "../errors.js";

/**
 * Cron expressions of schedules: five fields (minute hour day-of-month month day-of-week, or a
 * nickname such as @hourly), read in an IANA timezone. Day of month and day of week combine with
 * OR, as in classic cron. Parsing and the next fire time come from croner.
 */
export const DEFAULT_TIMEZONE = "UTC";

function parse(cronExpr: string, timezone: string): Cron {
  try {
    // A timezone croner cannot read fails only when a time is computed; Intl tells at once.
    new Intl.DateTimeFormat("en", { timeZone: timezone });
  } catch {
    throw new AppError(
      "invalid_arguments",
      `timezone ${timezone} is not an IANA timezone (e.g. Europe/Berlin)`,
    );
  }
  try {
    return new Cron(cronExpr, { mode: "5-part", timezone, paused: true });
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^CronPattern: /, "") : String(err);
    throw new AppError(
      "invalid_arguments",
      `cron_expr ${JSON.stringify(cronExpr)} is not a five-field cron expression (minute hour day month weekday): ${why}`,
    );
  }
}

/** The first fire time strictly after `after` (epoch ms), or null when the expression never fires again. */
export function nextFire(cronExpr: string, timezone: string, after: number): number | null {
  return parse(cronExpr, timezone).nextRun(new Date(after))?.getTime() ?? null;
}

/** Throws invalid_arguments unless the expression parses and fires at least once from `now`. */
export function requireValidCron(cronExpr: string, timezone: string, now: number): void {
  if (nextFire(cronExpr, timezone, now) === null) {
    throw new AppError("invalid_arguments", `cron_expr ${JSON.stringify(cronExpr)} never fires`);
  }
}
