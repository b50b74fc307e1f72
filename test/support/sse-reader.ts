/** Reads a text/event-stream response into events (for tests of the plain SSE endpoint). */
export interface SseEvent {
  id?: string;
  data: string;
}

/** Collects events from `response` into `into` until the stream ends or `signal` aborts. */
export async function readSse(response: Response, into: SseEvent[]): Promise<void> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = response.body.getReader();
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: SseEvent = { data: "" };
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) event.id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      event.data = data.join("\n");
      if (event.data) into.push(event);
      end = buffer.indexOf("\n\n");
    }
  }
}
