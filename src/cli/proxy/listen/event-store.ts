// A 2025-era session's events kept for resumption (rule 40: a client MAY resume a broken stream
// with GET and `Last-Event-ID`): the newest `capacity` events of the session, in memory, in the
// v1 SDK server transport's `EventStore` shape. An event older than that is gone: resuming from
// it answers 400 ("Invalid event ID format": the SDK transport's own answer for an unknown id).

type Message = unknown;

export interface SessionEventStoreShape {
  storeEvent(streamId: string, message: Message): Promise<string>;
  getStreamIdForEventId(eventId: string): Promise<string | undefined>;
  replayEventsAfter(lastEventId: string, io: { send: (eventId: string, message: never) => Promise<void> }): Promise<string>;
}

/** The newest `capacity` events of one session (ids `<n>`, increasing). */
export class SessionEventStore implements SessionEventStoreShape {
  readonly #capacity: number;
  readonly #events = new Map<number, { streamId: string; message: Message }>();
  /** The stream each message stored went on (the SDK transport stores the object it then writes). */
  readonly #streamOfMessage = new WeakMap<object, string>();
  /** The ids kept of each stream, oldest first (a cancel's stream finds its own without a walk over every event). */
  readonly #idsOfStream = new Map<string, Set<number>>();
  #next = 1;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  async storeEvent(streamId: string, message: Message): Promise<string> {
    const id = this.#next++;
    this.#events.set(id, { streamId, message });
    if (typeof message === "object" && message !== null) this.#streamOfMessage.set(message, streamId);
    const ids = this.#idsOfStream.get(streamId);
    if (ids === undefined) this.#idsOfStream.set(streamId, new Set([id]));
    else ids.add(id);
    // Every id is stored, one more each time, and only here is one dropped: the oldest is the one
    // `capacity` back. (Found through `keys().next()`, it cost a walk past every id dropped before
    // it that the map still kept as a hole: 39 µs an event at a capacity of 100,000.)
    if (this.#events.size > this.#capacity) {
      const oldest = id - this.#capacity;
      const dropped = this.#events.get(oldest);
      this.#events.delete(oldest);
      const of = dropped === undefined ? undefined : this.#idsOfStream.get(dropped.streamId);
      if (of !== undefined && of.delete(oldest) && of.size === 0) this.#idsOfStream.delete(dropped!.streamId);
    }
    return String(id);
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(parseId(eventId))?.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: never) => Promise<void> }): Promise<string> {
    const from = parseId(lastEventId);
    const streamId = this.#events.get(from)?.streamId;
    if (streamId === undefined) return "";
    // The stream's own ids after `from`, as kept now (a copy: events stored meanwhile are not replayed).
    const ids = [...(this.#idsOfStream.get(streamId) ?? [])].filter((id) => id > from);
    for (const id of ids) {
      const event = this.#events.get(id);
      // Priming events ({}) carry no message: nothing to replay. One dropped meanwhile is gone.
      if (event !== undefined && isMessage(event.message)) await send(String(id), event.message as never);
    }
    return streamId;
  }

  /** The stream `message` was stored for (the object given to the transport's `send`), if it was. */
  streamOf(message: object): string | undefined {
    return this.#streamOfMessage.get(message);
  }

  /** The stream of an event still kept (what a `Last-Event-ID` resumes), without waiting. */
  streamIdOf(eventId: string): string | undefined {
    return this.#events.get(parseId(eventId))?.streamId;
  }

  /** The ids of the events still kept for `streamId`, oldest first. */
  eventIdsOf(streamId: string): string[] {
    return [...(this.#idsOfStream.get(streamId) ?? [])].map(String);
  }

  get size(): number {
    return this.#events.size;
  }
}

function parseId(text: string): number {
  return /^\d{1,15}$/.test(text) ? Number(text) : -1;
}

function isMessage(value: unknown): boolean {
  return typeof value === "object" && value !== null && "jsonrpc" in value;
}
