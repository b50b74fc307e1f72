/**
 * Check 3: the Worker answers `GET /healthz` like an Oubliette Worker (`{"ok": true}`). A redirect
 * is a failure, not followed: the tunnel's WebSocket would not follow it either.
 */
import { z } from "zod";
import { describeFetchError } from "./fetch-error.js";
import type { DoctorFinding } from "./finding.js";

const HealthSchema = z.looseObject({ ok: z.literal(true) });

export async function checkWorkerHealth(
  workerUrl: string,
  fetcher: typeof fetch,
  signal: AbortSignal,
): Promise<DoctorFinding> {
  const url = new URL("/healthz", workerUrl);
  const started = Date.now();
  let res: Response;
  try {
    res = await fetcher(url, { signal, redirect: "manual" });
  } catch (error) {
    return { check: "worker", ok: false, ...describeFetchError(error, url, signal.aborted) };
  }
  const took = Date.now() - started;
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    const location = res.headers.get("location");
    return {
      check: "worker",
      ok: false,
      detail: `${url.href} answers ${res.status}, a redirect${location ? ` to ${location}` : ""}`,
      fix: "use the address it redirects to (https://, say) as --worker-url",
    };
  }
  const body: unknown = await res.json().catch(() => null);
  if (res.status !== 200)
    return {
      check: "worker",
      ok: false,
      detail: `${url.href} answers ${res.status}`,
      fix: "check --worker-url: it is the Worker's address, without a path (e.g. https://oubliette.<account>.workers.dev)",
    };
  if (!HealthSchema.safeParse(body).success)
    return {
      check: "worker",
      ok: false,
      detail: `${url.href} answers 200, but not as an Oubliette Worker does ({"ok":true})`,
      fix: "check --worker-url: something else answers there",
    };
  return { check: "worker", ok: true, detail: `${url.href} answers in ${took} ms` };
}
