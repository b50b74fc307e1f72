/**
 * A stream that lasts only as long as the sign-in it was opened under: every `everyMs` the
 * sign-in is checked again, and once it has ended (its token revoked or expired, or the person
 * signed out) the stream closes and its source is cancelled. A revoked token so stops seeing a
 * session's events within that time, not whenever the browser next reconnects.
 */
export function whileSignedIn(
  response: Response,
  stillSignedIn: () => Promise<boolean>,
  everyMs: number,
): Response {
  const source = response.body;
  if (source === null || !response.ok) return response;
  const reader = source.getReader();
  let closed = false;
  let timer: ReturnType<typeof setInterval> | null = null;
  const stop = () => {
    closed = true;
    if (timer !== null) clearInterval(timer);
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        stillSignedIn().then(
          (yes) => {
            if (yes || closed) return;
            stop();
            controller.close();
            void reader.cancel("the sign-in ended").catch(() => {});
          },
          () => {},
        );
      }, everyMs);
    },
    async pull(controller) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (closed) return;
      if (done || value === undefined) {
        stop();
        controller.close();
        return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
