// The messages a stdio connection holds while the server's stdin pipe is full (queue.ts), first
// in first out. A request leaves the middle when its call is cancelled while it waits (it never
// went), and a cancel line when its request is answered meanwhile (rule 7): each by its id, in
// constant time. A scan per cancel (the line was an array searched with `findIndex` and cut with
// `splice`) made a mass abort behind a server that stopped reading quadratic in the calls waiting.
import type { RequestId } from "../../core/cancellable-call.js";
import type { Message } from "../../wire/messages.js";
import type { SendOptions } from "../../wire/port.js";
import type { CancelRequest } from "../types.js";

/** One message waiting for the pipe. */
export interface Waiting {
  readonly message: Message;
  readonly options: SendOptions | undefined;
  /** The request id, for a request (a queued request can be dropped by its cancel). */
  readonly id: RequestId | undefined;
  /** The cancel line's request, for a `notifications/cancelled` of the library's own. */
  readonly cancel: CancelRequest | undefined;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** A compaction drops the slots already passed once there are more than this many, and more than the slots still ahead. */
const COMPACT_AFTER = 1_024;

/** The waiting messages, in order (see the file comment). @internal */
export class WaitingLine {
  /** Slots from `#head` on; a slot is `undefined` once its message left the middle. */
  #items: (Waiting | undefined)[] = [];
  #head = 0;
  /** The position of `#items[0]` among every message ever put in the line. */
  #first = 0;
  #size = 0;
  /** Each waiting message's position (see `#first`). */
  readonly #positions = new Map<Waiting, number>();
  /** The waiting requests by request id, and the waiting cancel lines by the id of the request they cancel (the first of each). */
  readonly #requests = new Map<RequestId, Waiting>();
  readonly #cancels = new Map<RequestId, Waiting>();

  /** Messages waiting. */
  get size(): number {
    return this.#size;
  }

  /** Cancel lines waiting (most of the time 0: an answer then costs no lookup). */
  get cancels(): number {
    return this.#cancels.size;
  }

  push(entry: Waiting): void {
    this.#positions.set(entry, this.#first + this.#items.length);
    this.#items.push(entry);
    this.#size++;
    if (entry.cancel !== undefined) {
      if (!this.#cancels.has(entry.cancel.requestId)) this.#cancels.set(entry.cancel.requestId, entry);
    } else if (entry.id !== undefined && !this.#requests.has(entry.id)) {
      this.#requests.set(entry.id, entry);
    }
  }

  /** The waiting request with this id, taken out of the line; `undefined` when none waits. */
  takeRequest(id: RequestId): Waiting | undefined {
    const entry = this.#requests.get(id);
    if (entry !== undefined) this.#remove(entry);
    return entry;
  }

  /** The waiting cancel line of the request with this id (still in the line), if any. */
  cancelOf(requestId: RequestId): Waiting | undefined {
    return this.#cancels.get(requestId);
  }

  /** Takes `entry` (waiting in the line) out of it. */
  take(entry: Waiting): void {
    this.#remove(entry);
  }

  /** The first message waiting, taken out of the line; `undefined` when none waits. */
  shift(): Waiting | undefined {
    const items = this.#items;
    while (this.#head < items.length) {
      const entry = items[this.#head];
      items[this.#head++] = undefined;
      if (entry === undefined) continue;
      this.#forget(entry);
      this.#compact();
      return entry;
    }
    this.#compact();
    return undefined;
  }

  /** Every waiting cancel line, in order, taken out of the line (the requests stay, in order). */
  takeCancels(): Waiting[] {
    const taken = [...this.#cancels.values()];
    for (const entry of taken) this.#remove(entry);
    return taken;
  }

  /** Every waiting message, in order; the line is then empty. */
  takeAll(): Waiting[] {
    const all: Waiting[] = [];
    for (let i = this.#head; i < this.#items.length; i++) {
      const entry = this.#items[i];
      if (entry !== undefined) all.push(entry);
    }
    this.#first += this.#items.length;
    this.#items = [];
    this.#head = 0;
    this.#size = 0;
    this.#positions.clear();
    this.#requests.clear();
    this.#cancels.clear();
    return all;
  }

  #remove(entry: Waiting): void {
    const position = this.#positions.get(entry);
    if (position === undefined) return;
    this.#items[position - this.#first] = undefined;
    this.#forget(entry);
    this.#compact();
  }

  /** Off the indexes and the count (its slot is cleared by the caller). */
  #forget(entry: Waiting): void {
    this.#positions.delete(entry);
    this.#size--;
    if (entry.cancel !== undefined) {
      if (this.#cancels.get(entry.cancel.requestId) === entry) this.#cancels.delete(entry.cancel.requestId);
    } else if (entry.id !== undefined && this.#requests.get(entry.id) === entry) {
      this.#requests.delete(entry.id);
    }
  }

  /** Empties the slots array once nothing waits; drops the slots passed once they are the most of it. */
  #compact(): void {
    if (this.#size === 0) {
      this.#first += this.#items.length;
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > COMPACT_AFTER && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#first += this.#head;
      this.#head = 0;
    }
  }
}
