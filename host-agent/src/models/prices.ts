/**
 * What model tokens cost, in one place: USD per million input and output tokens, by model name
 * prefix (the longest matching prefix wins), with a per-provider fallback for models not listed.
 * Estimates for budgets, not invoices: cache reads and writes are counted as plain input.
 */
import type { ModelProvider } from "../../../protocol/agent-runtimes.js";

interface Price {
  inputPerMillion: number;
  outputPerMillion: number;
}

const PRICES: readonly (readonly [prefix: string, price: Price])[] = [
  ["claude-opus", { inputPerMillion: 15, outputPerMillion: 75 }],
  ["claude-sonnet", { inputPerMillion: 3, outputPerMillion: 15 }],
  ["claude-haiku", { inputPerMillion: 1, outputPerMillion: 5 }],
  ["gpt-5-mini", { inputPerMillion: 0.25, outputPerMillion: 2 }],
  ["gpt-5", { inputPerMillion: 1.25, outputPerMillion: 10 }],
  ["gpt-4.1", { inputPerMillion: 2, outputPerMillion: 8 }],
  ["gemini-2.5-pro", { inputPerMillion: 1.25, outputPerMillion: 10 }],
  ["gemini-2.5-flash", { inputPerMillion: 0.3, outputPerMillion: 2.5 }],
];

const FALLBACK: Readonly<Record<ModelProvider, Price>> = {
  anthropic: { inputPerMillion: 3, outputPerMillion: 15 },
  openai: { inputPerMillion: 1.25, outputPerMillion: 10 },
  google: { inputPerMillion: 1.25, outputPerMillion: 10 },
};

export function priceOf(provider: ModelProvider, model: string | null): Price {
  let best: Price | null = null;
  let bestLength = -1;
  for (const [prefix, price] of PRICES) {
    if (model?.startsWith(prefix) && prefix.length > bestLength) {
      best = price;
      bestLength = prefix.length;
    }
  }
  return best ?? FALLBACK[provider];
}

/** The estimated cost of one response's tokens. */
export function costOf(provider: ModelProvider, model: string | null, input: number, output: number): number {
  const price = priceOf(provider, model);
  return (input * price.inputPerMillion + output * price.outputPerMillion) / 1_000_000;
}
