import { z } from "zod";

/** A session's model usage: what the host's model proxy counted from the model's own responses. */
export const UsageTotalsSchema = z.object({
  requests: z.number().int().nonnegative(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  /** Estimated from the price table (host-agent/src/models/prices.ts). */
  cost_usd: z.number().nonnegative(),
});
export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

export const ZERO_USAGE: UsageTotals = Object.freeze({
  requests: 0,
  input_tokens: 0,
  output_tokens: 0,
  cost_usd: 0,
});
