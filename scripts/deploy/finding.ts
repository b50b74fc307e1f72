/** One line of `npm run deploy`'s report: something a deploy needs, whether it is there, how to set it. */
export interface Finding {
  what: string;
  ok: boolean;
  /** How to set it; empty when `ok`. */
  fix: string;
}

export const found = (what: string): Finding => ({ what, ok: true, fix: "" });
export const missing = (what: string, fix: string): Finding => ({ what, ok: false, fix });

/** `✓ what` or `✗ what — fix`: one line, so a long report still reads as a checklist. */
export function formatFinding(finding: Finding): string {
  return finding.ok ? `✓ ${finding.what}` : `✗ ${finding.what} — ${finding.fix}`;
}
