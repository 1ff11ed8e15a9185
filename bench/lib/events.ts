/** One timestamped observation reported by a bench server (`t` in ms: epoch-based wall clock or `performance.now()`). */
export interface BenchEvent {
  event: string;
  tag?: string;
  requestId?: string | number;
  t: number;
  [key: string]: unknown;
}

interface Waiter {
  match: (event: BenchEvent) => boolean;
  resolve: (event: BenchEvent) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** A log of server events that a harness can await, each wait bounded. */
export class EventLog {
  readonly events: BenchEvent[] = [];
  readonly #waiters = new Set<Waiter>();

  push(event: BenchEvent): void {
    this.events.push(event);
    for (const waiter of this.#waiters) {
      if (waiter.match(event)) {
        this.#waiters.delete(waiter);
        clearTimeout(waiter.timer);
        waiter.resolve(event);
      }
    }
  }

  /** Feeds lines of `BENCH {json}` (the stdio server's stderr); other lines are passed to `other`. */
  lineReader(other: (line: string) => void = () => {}): (chunk: Buffer | string) => void {
    let buffer = "";
    return (chunk) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.startsWith("BENCH ")) this.push(JSON.parse(line.slice(6)) as BenchEvent);
        else if (line.trim().length > 0) other(line);
      }
    };
  }

  /** The first logged event matching, or the next one to arrive within `timeoutMs`. */
  wait(match: (event: BenchEvent) => boolean, timeoutMs: number, what: string): Promise<BenchEvent> {
    const found = this.events.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** The matching event if it arrives within `timeoutMs`, else `null` (a censored observation). */
  async maybe(match: (event: BenchEvent) => boolean, timeoutMs: number): Promise<BenchEvent | null> {
    try {
      return await this.wait(match, timeoutMs, "event");
    } catch {
      return null;
    }
  }
}
