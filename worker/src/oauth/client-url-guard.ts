import ipaddr from "ipaddr.js";

/**
 * A Client ID Metadata Document is fetched from the client_id URL a client presents: a way to
 * make this Worker fetch a URL of anyone's choosing. Deployed, the fetch leaves through the public
 * internet only (`global_fetch_strictly_public`) and the library holds it to https, 5 KB and 10 s;
 * on top of that, a client_id naming a loopback, private or otherwise non-public address (or a
 * local-only name) is refused before anything is fetched, unless local development allows it
 * (OUBLIETTE_OAUTH_DEV_CLIENTS=1, where test clients serve their documents on loopback).
 */

/** Host names that only ever resolve to this machine or a local network. */
const LOCAL_NAMES = /(^|\.)(localhost|local|internal|home\.arpa|lan)$/i;

/** Why a client_id URL may not be fetched, or null when it may (or is not a URL at all). */
export function refusedClientUrl(clientId: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return null; // a plain client id (DCR or pre-registered): nothing to fetch
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  if (allowPrivate) return null;
  if (url.protocol !== "https:") return "a client_id URL must use https";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) {
    const range = ipaddr.process(host).range();
    return range === "unicast" ? null : `a client_id URL may not point at a ${range} address`;
  }
  if (LOCAL_NAMES.test(host) || !host.includes("."))
    return `a client_id URL may not name the local host ${host}`;
  return null;
}
