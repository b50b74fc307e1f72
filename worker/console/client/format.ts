/** Display helpers: times and absent values, one way everywhere. */

/** A missing value shows as an em dash. */
export function dash(value: string | number | null | undefined): string {
  return value === null || value === undefined || value === "" ? "—" : String(value);
}

/** "5s", "3m", "2h", "4d" since `iso` (the age column). */
export function age(iso: string | null, now: number = Date.now()): string {
  if (!iso) return "—";
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return "—";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** A timestamp in the reader's locale, or a dash. */
export function when(iso: string | null): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** Only the time of day, for event lines. */
export function clock(iso: string | null): string {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString();
}

/** US dollars with cents (smaller amounts keep four decimals). */
export function usd(value: number | null): string {
  if (value === null) return "—";
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

/** A byte count in B, kB, MB or GB (powers of 1000, one decimal past kilobytes). */
export function bytes(value: number): string {
  if (value < 1000) return `${value} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let scaled = value;
  let unit = "B";
  for (const next of units) {
    if (scaled < 1000) break;
    scaled /= 1000;
    unit = next;
  }
  return `${scaled.toFixed(1)} ${unit}`;
}

/** `host:port`, an IPv6 address in brackets (as the gate and the allowlists write it). */
export function hostPort(host: string, port: number | null): string {
  const shown = host.includes(":") ? `[${host}]` : host;
  return port === null ? shown : `${shown}:${port}`;
}
