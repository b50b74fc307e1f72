import { sessionTokenMatches } from "./session-token.js";
import type { SocketAuth } from "./types.js";

/**
 * The secrets one container socket accepts: the container's own (its runner) and one per session
 * running in it. A presented secret is compared with every known one in constant time, so the
 * answer leaks neither which session nor how much of a secret matched.
 */
export class SocketSecrets implements SocketAuth {
  readonly settled: Promise<void>;
  readonly #runnerToken: string;
  readonly #sessions = new Map<string, string>();
  #settle: () => void = () => {};

  /** `settled`: whether every session's secret is known from the start (not so for an adopted container). */
  constructor(runnerToken: string, settled = true) {
    this.#runnerToken = runnerToken;
    this.settled = settled
      ? Promise.resolve()
      : new Promise((resolve) => {
          this.#settle = resolve;
        });
  }

  /** The sessions' secrets are all known now (the runner said hello, or it took too long). */
  settle(): void {
    this.#settle();
  }

  runner(token: string): boolean {
    return sessionTokenMatches(token, this.#runnerToken);
  }

  client(token: string): string | null {
    let found: string | null = null;
    for (const [sessionId, secret] of this.#sessions) {
      if (sessionTokenMatches(token, secret)) found = sessionId;
    }
    return found;
  }

  addSession(sessionId: string, token: string): void {
    this.#sessions.set(sessionId, token);
  }

  removeSession(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }
}

/** A runner's own socket: only the container's secret is accepted there, and only as the runner. */
export function runnerOnlyAuth(runnerToken: string): SocketAuth {
  return {
    runner: (token) => sessionTokenMatches(token, runnerToken),
    client: () => null,
  };
}

/** A session's own socket: only that session's secret is accepted there, and only as its client. */
export function sessionOnlyAuth(sessionId: string, sessionToken: string): SocketAuth {
  return {
    runner: () => false,
    client: (token) => (sessionTokenMatches(token, sessionToken) ? sessionId : null),
  };
}
