/**
 * Check 4: the Worker takes this host token for this host id (`GET /v1/hosts/self`,
 * protocol/host-self.ts): an enrolled token is bound to one host id and the tunnel refuses it
 * for any other; the shared token fits every host id. The token is sent, never shown.
 */
import { z } from "zod";
import { HOST_SELF_PATH, HostSelfSchema } from "../../../../protocol/host-self.js";
import { clip } from "../../../../protocol/rpc/errors.js";
import { describeFetchError } from "./fetch-error.js";
import type { DoctorFinding } from "./finding.js";

const WorkerErrorSchema = z.looseObject({ error: z.looseObject({ message: z.string() }) });

export interface HostTokenInput {
  workerUrl: string;
  hostToken: string;
  hostId: string;
}

/** The Worker's own words about a refusal (its messages never hold a token). */
function workerSays(body: unknown): string {
  const parsed = WorkerErrorSchema.safeParse(body);
  return parsed.success ? `: ${clip(parsed.data.error.message, 200)}` : "";
}

export async function checkHostToken(
  input: HostTokenInput,
  fetcher: typeof fetch,
  signal: AbortSignal,
): Promise<DoctorFinding> {
  const url = new URL(HOST_SELF_PATH, input.workerUrl);
  let res: Response;
  try {
    res = await fetcher(url, {
      signal,
      redirect: "manual",
      headers: { authorization: `Bearer ${input.hostToken}` },
    });
  } catch (error) {
    return { check: "host-token", ok: false, ...describeFetchError(error, url, signal.aborted) };
  }
  const body: unknown = await res.json().catch(() => null);
  const fail = (detail: string, fix: string): DoctorFinding => ({
    check: "host-token",
    ok: false,
    detail,
    fix,
  });
  switch (res.status) {
    case 200: {
      const self = HostSelfSchema.safeParse(body);
      if (!self.success)
        return fail(
          `the Worker's answer to ${HOST_SELF_PATH} is not one this host-agent reads`,
          "deploy the Worker and the host-agent from the same version",
        );
      const bound = self.data.host_id;
      if (bound === null)
        return {
          check: "host-token",
          ok: true,
          detail: `the Worker takes this token (the shared host token: any host id, ${input.hostId} too)`,
        };
      if (bound === input.hostId)
        return { check: "host-token", ok: true, detail: `the Worker takes this token for host ${bound}` };
      return fail(
        `this token is bound to host ${bound}, not ${input.hostId}: the Worker would refuse the tunnel`,
        `run with --host-id ${bound}, or enrol ${input.hostId} (host {"action":"enrol","host_id":"${input.hostId}"}) and use its token`,
      );
    }
    case 401:
      return fail(
        `the Worker refuses this token (unknown, revoked or expired)${workerSays(body)}`,
        "set OUBLIETTE_HOST_TOKEN (or --host-token) to this host's token from `host enrol`, or to the Worker's OUBLIETTE_HOST_TOKEN",
      );
    case 403:
      return fail(
        `the Worker answers 403${workerSays(body)}`,
        "use a host token (from `host enrol`), not a caller's API token; if the Worker says this host name is not served, add its origin to OUBLIETTE_PUBLIC_ORIGINS",
      );
    case 404:
      return fail(
        `the Worker has no ${HOST_SELF_PATH}: it is older than this host-agent, or not an Oubliette Worker`,
        "deploy the current Worker (npm run deploy), then run doctor again",
      );
    default:
      return fail(
        `${url.href} answers ${res.status}${workerSays(body)}`,
        "check --worker-url and the Worker's logs",
      );
  }
}
