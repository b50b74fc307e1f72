/**
 * Waits for a Durable Object to reach a state it reaches asynchronously (e.g. after it handles
 * a WebSocket close, which the client side cannot observe). Polls; fails after `tries`.
 */
export async function until(check: () => Promise<boolean>, what: string, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await scheduler.wait(5);
  }
  throw new Error(`timed out waiting until ${what}`);
}
