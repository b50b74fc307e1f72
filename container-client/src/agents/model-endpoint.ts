/**
 * How an agent CLI is pointed at the in-container model forwarder: the provider entry its config
 * names, the OpenAI-style base URL, and the variable that carries the session's placeholder
 * credential (never a provider key: the host-agent swaps it for the real one).
 */
import type { DriverContext } from "./driver.js";

/** The provider id the forwarder is configured under in a CLI's config. */
export const MODEL_PROVIDER_ID = "oubliette";

/** A human name for it, where the config wants one. */
export const MODEL_PROVIDER_NAME = "Oubliette model forwarder";

/** The variable holding the placeholder credential, for CLIs that read their key from a named variable. */
export const MODEL_TOKEN_ENV = "OUBLIETTE_MODEL_TOKEN";

/** The forwarder's OpenAI-style base URL (`/v1/responses`, `/v1/chat/completions` hang off it). */
export function openAiBaseUrl(context: DriverContext): string {
  return `${context.modelBaseUrl}/v1`;
}
