/**
 * Why an HTTP request to the Worker got no answer, in words a person can act on: the name does
 * not resolve, nothing listens, TLS fails, or it took too long. Node's fetch wraps the system's
 * error (its `code`) in a TypeError's `cause`; a connection tried on several addresses wraps them
 * in an AggregateError.
 */

export interface Unreached {
  detail: string;
  fix: string;
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

function codeOf(error: unknown): string | undefined {
  let current: unknown = error;
  // fetch → cause (the socket's error) → errors[0] (one per address tried)
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const { code, cause, errors } = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === "string" && code !== "") return code;
    current = cause ?? (Array.isArray(errors) ? errors[0] : undefined);
  }
  return undefined;
}

function nameOf(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

/** The innermost message ("fetch failed" says nothing; its cause, "bad port" say, does). */
function innermostMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error && current.cause !== undefined; depth++) {
    current = current.cause;
    if (current instanceof Error && current.message !== "") message = current.message;
  }
  return message;
}

/** Describes a failed request to `url` (`timedOut`: our deadline aborted it). */
export function describeFetchError(error: unknown, url: URL, timedOut: boolean): Unreached {
  const where = `${url.protocol}//${url.host}`;
  const code = codeOf(error);
  if (
    timedOut ||
    nameOf(error) === "TimeoutError" ||
    nameOf(error) === "AbortError" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  )
    return {
      detail: `${where} did not answer in time`,
      fix: "check that this host can reach the Worker (firewall, proxy, routing) and that --worker-url is right",
    };
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME")
    return {
      detail: `the name ${url.hostname} does not resolve (DNS: ${code})`,
      fix: "check --worker-url (a typo?) and this host's DNS resolver",
    };
  if (code === "ECONNREFUSED")
    return {
      detail: `${where} refuses connections (nothing listens there)`,
      fix: "check --worker-url's host and port; for a local Worker, is `npm start` (wrangler dev) running?",
    };
  if (code !== undefined && TLS_CODE.test(code))
    return {
      detail: `TLS with ${where} fails (${code})`,
      fix:
        code === "ERR_SSL_WRONG_VERSION_NUMBER"
          ? "the port does not speak TLS: use http:// for it, or the Worker's https:// address"
          : "the Worker's certificate is not trusted here: check the URL, the host's clock and its CA certificates",
    };
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH")
    return {
      detail: `${where} is unreachable from this host (${code})`,
      fix: "check this host's network and routes",
    };
  const detail = code === undefined ? innermostMessage(error) : code;
  return { detail: `no answer from ${where}: ${detail}`, fix: "check --worker-url and this host's network" };
}
