// What the soak's servers saw, side by side with what the records say (issue 27's "Done when").
// One `ServerLog` per connection (request ids count from 0 on each): the server's own log (the
// request taken up, its response written, each `notifications/cancelled` naming it), what the
// client handed its transport (the cancel lines, in order), and the last revision of each call's
// record. `judge` reads them against each other:
//
// - an overtake: a notification the server got before it took up the request it names (or for a
//   request it never took up);
// - after its response: a notification the server got after it had written that request's response;
// - a duplicate: a second notification naming the same request;
// - a contradiction: a record whose `cancel.mechanism` / `sentAt` says a notification went out
//   that the server never got, whose `undelivered` says it did not reach the server when it did,
//   that says nothing of a notification the server got, or `outcome: "not-sent"` for a request the
//   server took up. A crash explains only what it can: on stdio a cancel line written after the
//   last line the dying server read (a pipe is read in order), on HTTP a notification whose own
//   answer (202) never finished, so the client could not know it arrived.
//
// Kept in one Float64Array per connection (NaN: not seen): the soak's own bookkeeping stays off
// the JS heap, whose growth the soak checks, and a 120 s run at 2,000 calls a second fits.
import type { RunRecord } from "../../src/index.js";

const COLUMNS = [
  // the server's log: order (a time, or stdio's line number) and time (ms, performance.now() of this process)
  "took",
  "tookT",
  /** HTTP: when the request's POST reached the server's request handler (before its body was read and handed to the SDK). */
  "arrivedT",
  "answered",
  "answeredT",
  "cancel",
  "cancelT",
  "cancels",
  /** HTTP: when the first notification POST naming it reached the server's request handler. */
  "cancelArrivedT",
  /** HTTP: a notification POST whose own answer never finished (the connection died under it). */
  "unanswered",
  // what the client handed its transport (a wrapper on `send`, as a logging wrapper would be)
  "requestSeq",
  "requestT",
  "cancelSeq",
  "clientCancelT",
  "clientCancels",
  /** When the client's transport handed up the request's response (the soak's wrapper on `onmessage`). */
  "clientReadT",
  // the last revision of the record
  "mechanism",
  "sent",
  "undelivered",
  "notSent",
  "tool",
  "lateResults",
  "lateErrors",
  "lateProgress",
] as const;
type Column = (typeof COLUMNS)[number];
const WIDTH = COLUMNS.length;
const AT = Object.fromEntries(COLUMNS.map((name, i) => [name, i])) as Record<Column, number>;

const MECHANISMS = ["none", "notification", "stream-close", "notification+stream-close", "tasks/cancel"] as const;
const UNDELIVERED = ["none", "notification", "stream-close", "tasks/cancel"] as const;

/** How the transport under a connection carries a cancel (what `judge` expects of its server). */
export interface Carrier {
  /** `notifications/cancelled` is the cancel (stdio, 2025-era HTTP); else none may arrive (2026-07-28). */
  readonly notifications: boolean;
  /**
   * The server shows it took the request up before the notification can go (stdio: the pipe is in
   * order; an SSE server sends the response head as it starts): an overtake there is a failure. On
   * a JSON-response server the client cannot know, so overtakes are counted, not failed.
   */
  readonly ordered: boolean;
  /** stdio: a crash loses only the lines written after the last one the server read. */
  readonly fifo: boolean;
}

/** The figures of one connection, or summed over a transport. */
export interface Counts {
  /** Requests the server took up. */
  requests: number;
  /** `notifications/cancelled` the server got. */
  cancelsReceived: number;
  /** Records that say a notification went out (`cancel.mechanism` names it). */
  cancelsClaimed: number;
  overtakes: number;
  /** Of the overtakes: notifications naming a request the server never took up at all. */
  orphans: number;
  afterResponse: number;
  /** Of those: the response was written before the client sent the notification (it crossed the notification unread). */
  crossed: number;
  duplicates: number;
  contradictions: number;
  /** Discrepancies a crash explains (see the file comment); not failures. */
  explainedByCrash: number;
  /** Records `not-sent`. */
  notSent: number;
}

export const noCounts = (): Counts => ({
  requests: 0,
  cancelsReceived: 0,
  cancelsClaimed: 0,
  overtakes: 0,
  orphans: 0,
  afterResponse: 0,
  crossed: 0,
  duplicates: 0,
  contradictions: 0,
  explainedByCrash: 0,
  notSent: 0,
});

export function addCounts(into: Counts, from: Counts): Counts {
  for (const key of Object.keys(into) as (keyof Counts)[]) into[key] += from[key];
  return into;
}

/** What `judge` found: the counts, what fails the run (one line each), and the timelines of notifications after their response. */
export interface Verdict {
  counts: Counts;
  failures: string[];
  /** One line per notification that arrived after its response: who did what when (ms, this process's clock). */
  afterResponse: string[];
  /** Overtakes that do not fail (JSON-response servers), each with its timeline. */
  overtakes: string[];
}

export class ServerLog {
  readonly label: string;
  #rows = new Float64Array(WIDTH * 1_024).fill(Number.NaN);
  #size = 0;
  readonly #tools: string[] = [];
  /** stdio: the client's sequence number of the last line the server read. */
  #lastSeqRead = -1;
  #clientSeq = 0;
  /** Set when the driver killed the server under this connection (performance.now()). */
  crashedAt: number | undefined;

  constructor(label: string) {
    this.label = label;
  }

  #index(id: unknown): number | undefined {
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0) return undefined;
    if (id >= this.#size) this.#size = id + 1;
    let length = this.#rows.length;
    if (id * WIDTH >= length) {
      while (id * WIDTH >= length) length *= 2;
      const grown = new Float64Array(length).fill(Number.NaN);
      grown.set(this.#rows);
      this.#rows = grown;
    }
    return id * WIDTH;
  }

  #get(id: number, column: Column): number {
    return id < this.#size ? this.#rows[id * WIDTH + AT[column]]! : Number.NaN;
  }

  #set(row: number, column: Column, value: number): void {
    this.#rows[row + AT[column]] = value;
  }

  #first(row: number, column: Column, value: number): void {
    if (Number.isNaN(this.#rows[row + AT[column]]!)) this.#rows[row + AT[column]] = value;
  }

  #count(row: number, column: Column): void {
    const at = row + AT[column];
    this.#rows[at] = (Number.isNaN(this.#rows[at]!) ? 0 : this.#rows[at]!) + 1;
  }

  // ---- the server's log ------------------------------------------------------------------------

  /** The server took the request up (began handling it). `at` orders events; `t` is the time, ms. */
  took(id: unknown, at: number, t = at): void {
    const row = this.#index(id);
    if (row === undefined) return;
    this.#first(row, "took", at);
    this.#first(row, "tookT", t);
    this.#read(this.#rows[row + AT.requestSeq]!);
  }

  /** The server wrote the request's response. */
  answered(id: unknown, at: number, t = at): void {
    const row = this.#index(id);
    if (row === undefined) return;
    this.#first(row, "answered", at);
    this.#first(row, "answeredT", t);
  }

  /** A `notifications/cancelled` naming `id` reached the server. */
  cancelled(id: unknown, at: number, t = at): void {
    const row = this.#index(id);
    if (row === undefined) return;
    this.#first(row, "cancel", at);
    this.#first(row, "cancelT", t);
    this.#count(row, "cancels");
    this.#read(this.#rows[row + AT.cancelSeq]!);
  }

  /** HTTP: a POST carrying the request (`cancel`: a notification naming it) reached the server's request handler at `t`. */
  arrived(id: unknown, t: number, cancel: boolean): void {
    const row = this.#index(id);
    if (row !== undefined) this.#first(row, cancel ? "cancelArrivedT" : "arrivedT", t);
  }

  /** HTTP: the server's answer to a notification POST naming `id` never finished (its connection died). */
  unanswered(id: unknown): void {
    const row = this.#index(id);
    if (row !== undefined) this.#set(row, "unanswered", 1);
  }

  #read(seq: number): void {
    if (seq > this.#lastSeqRead) this.#lastSeqRead = seq;
  }

  // ---- what the client did -----------------------------------------------------------------------

  /** The client's transport handed a message up (the soak's wrapper on `onmessage`): for a response, when the client could know its request was over. */
  clientRead(message: { method?: unknown; id?: unknown }, t: number): void {
    if (message.method !== undefined || message.id === undefined) return;
    const row = this.#index(message.id);
    if (row !== undefined) this.#first(row, "clientReadT", t);
  }

  /** The client handed a message to its transport (the soak's wrapper on `send`). */
  clientSent(message: { method?: unknown; id?: unknown; params?: unknown }, t: number): void {
    const seq = this.#clientSeq++;
    if (message.method === "notifications/cancelled") {
      const row = this.#index((message.params as { requestId?: unknown } | undefined)?.requestId);
      if (row === undefined) return;
      this.#first(row, "cancelSeq", seq);
      this.#first(row, "clientCancelT", t);
      this.#count(row, "clientCancels");
    } else if (typeof message.method === "string" && message.id !== undefined) {
      const row = this.#index(message.id);
      if (row === undefined) return;
      this.#first(row, "requestSeq", seq);
      this.#first(row, "requestT", t);
    }
  }

  /** A record (each revision replaces the last). */
  record(record: RunRecord): void {
    const row = this.#index(record.requestId);
    if (row === undefined) return;
    const cancel = record.cancel;
    this.#set(row, "mechanism", cancel === null ? Number.NaN : MECHANISMS.indexOf(cancel.mechanism));
    this.#set(row, "sent", cancel?.sentAt == null ? 0 : 1);
    this.#set(row, "undelivered", cancel === null ? 0 : UNDELIVERED.indexOf(cancel.undelivered?.mechanism ?? "none"));
    this.#set(row, "notSent", record.outcome === "not-sent" ? 1 : 0);
    const name = record.name ?? record.method;
    let tool = this.#tools.indexOf(name);
    if (tool < 0) tool = this.#tools.push(name) - 1;
    this.#set(row, "tool", tool);
    this.#set(row, "lateResults", record.late.results);
    this.#set(row, "lateErrors", record.late.errors);
    this.#set(row, "lateProgress", record.late.progress);
  }

  /** Late messages discarded, summed over the last revision of every record. */
  late(): { results: number; errors: number; progress: number } {
    const sum = { results: 0, errors: 0, progress: 0 };
    for (let id = 0; id < this.#size; id++) {
      sum.results += num(this.#get(id, "lateResults"));
      sum.errors += num(this.#get(id, "lateErrors"));
      sum.progress += num(this.#get(id, "lateProgress"));
    }
    return sum;
  }

  /** The whole table as CSV (one row per request id seen; times in ms, this process's clock), for a closer look (`--dump DIR`). */
  csv(): string {
    const lines = [["id", ...COLUMNS].join(",")];
    for (let id = 0; id < this.#size; id++) {
      const row = COLUMNS.map((column) => {
        const value = this.#get(id, column);
        if (Number.isNaN(value)) return "";
        if (column === "tool") return this.#tools[value] ?? "";
        if (column === "mechanism") return MECHANISMS[value] ?? "";
        if (column === "undelivered") return UNDELIVERED[value] ?? "";
        return Number.isInteger(value) ? String(value) : value.toFixed(1);
      });
      if (row.some((cell) => cell !== "")) lines.push([String(id), ...row].join(","));
    }
    return `${lines.join("\n")}\n`;
  }

  /** Reads the log against the records (see the file comment). */
  judge(carrier: Carrier): Verdict {
    const counts = noCounts();
    const verdict: Verdict = { counts, failures: [], afterResponse: [], overtakes: [] };
    const fail = (id: number, what: string): void => {
      counts.contradictions++;
      verdict.failures.push(`${this.#name(id)}: ${what}`);
    };
    const crashed = this.crashedAt !== undefined;
    for (let id = 0; id < this.#size; id++) {
      const took = this.#get(id, "took");
      const cancel = this.#get(id, "cancel");
      const got = num(this.#get(id, "cancels"));
      const answered = this.#get(id, "answered");
      const mechanism = this.#get(id, "mechanism");
      const hasRecord = !Number.isNaN(this.#get(id, "notSent"));
      if (!Number.isNaN(took)) counts.requests++;
      counts.cancelsReceived += got;

      if (got > 0) {
        if (!carrier.notifications) {
          counts.contradictions++;
          verdict.failures.push(`${this.#name(id)}: ${got} notifications/cancelled on a connection whose cancel is the stream close`);
        }
        if (got > 1) {
          counts.duplicates += got - 1;
          // A 2025-era notification is retried once after a connection-level failure (only a
          // crash makes one here): a duplicate is then harmless (rule 10). Anywhere else it is
          // a second cancel for one request.
          if (carrier.fifo || !crashed)
            verdict.failures.push(`${this.#name(id)}: the server got ${got} notifications/cancelled for it (${this.#timeline(id)})`);
        }
        if (Number.isNaN(took) || cancel < took) {
          counts.overtakes++;
          if (Number.isNaN(took)) counts.orphans++;
          const line = `${this.#name(id)}: the notification arrived ${Number.isNaN(took) ? "for a request the server never took up" : "before the server took up its request"} (${this.#timeline(id)})`;
          if (carrier.ordered) verdict.failures.push(line);
          else verdict.overtakes.push(line);
        }
        if (!Number.isNaN(answered) && cancel > answered) {
          counts.afterResponse++;
          if (this.#get(id, "clientCancelT") >= this.#get(id, "answeredT")) counts.crossed++;
          verdict.afterResponse.push(`${this.#name(id)}: ${this.#crossing(id)}; ${this.#timeline(id)}`);
          // In flight: the client sent it before the server wrote the response. The two crossed on
          // the wire (a server writes its answer before it reads what waits for it), which no client
          // can see or prevent: counted, not failed, on every carrier. Sent after the response was
          // written but before the client had read it (crossed): the answer was on its way, or came
          // after the client's turn had read its input, which no client can see either (a timer
          // held back by the soak's own full collections fires late, its response already
          // written). Sent after the client had read the response fails: it knew (rule 7).
          const readFirst = this.#get(id, "clientReadT") <= this.#get(id, "clientCancelT");
          if (readFirst)
            verdict.failures.push(`${this.#name(id)}: the client sent the notification after it had read the response (rule 7)`);
        }
        if (!hasRecord) fail(id, `the server got a notifications/cancelled for a request with no record (${this.#timeline(id)})`);
      }
      if (!hasRecord) continue;

      const name = Number.isNaN(mechanism) ? "no cancel" : MECHANISMS[mechanism]!;
      const claims = name === "notification" || name === "notification+stream-close";
      const denies = UNDELIVERED[this.#get(id, "undelivered")] === "notification";
      const sent = this.#get(id, "sent") === 1;
      const notSent = this.#get(id, "notSent") === 1;
      if (claims) counts.cancelsClaimed++;
      if (notSent) counts.notSent++;
      if (!Number.isNaN(mechanism) && (name === "none") === sent)
        fail(id, `record says mechanism ${name} with sentAt ${sent ? "set" : "null"}`);
      if (claims && got === 0) {
        if (this.#lostInCrash(id, carrier)) counts.explainedByCrash++;
        else fail(id, `record says a notification went out (${name}, sentAt set), the server never got it (${this.#timeline(id)})`);
      }
      if (denies && got > 0) {
        if (crashed && this.#get(id, "unanswered") === 1) counts.explainedByCrash++;
        else fail(id, `record says the notification was undelivered, the server got it (${this.#timeline(id)})`);
      }
      if (!claims && !denies && got > 0) fail(id, `record says ${name}, the server got a notifications/cancelled (${this.#timeline(id)})`);
      if (notSent && !Number.isNaN(took)) fail(id, `record says not-sent, the server took the request up (${this.#timeline(id)})`);
      if (notSent && claims) fail(id, `record says not-sent and a notification went out (${name})`);
    }
    return verdict;
  }

  /** stdio: the dying server read nothing written after this cancel line (a pipe is read in order). */
  #lostInCrash(id: number, carrier: Carrier): boolean {
    if (this.crashedAt === undefined || !carrier.fifo) return false;
    const seq = this.#get(id, "cancelSeq");
    return !Number.isNaN(seq) && seq > this.#lastSeqRead;
  }

  #name(id: number): string {
    const tool = this.#get(id, "tool");
    return `${this.label} id ${id}${Number.isNaN(tool) ? "" : ` (${this.#tools[tool]})`}`;
  }

  /** How a notification after its response came about: which of the two was on the wire first. */
  #crossing(id: number): string {
    const sent = this.#get(id, "clientCancelT");
    const answered = this.#get(id, "answeredT");
    if (Number.isNaN(sent)) return "the client's send of it was not seen";
    const gap = Math.abs(answered - sent).toFixed(1);
    const read = this.#get(id, "clientReadT");
    const reading = Number.isNaN(read)
      ? "never read by the client: the connection ended first"
      : read <= sent
        ? `read by the client ${(sent - read).toFixed(1)} ms before it sent the notification`
        : `not yet read by the client, which read it ${(read - sent).toFixed(1)} ms later`;
    return sent >= answered
      ? `crossed: the response was written ${gap} ms before the client sent the notification (${reading})`
      : `in flight: the notification was on its way ${gap} ms when the server wrote the response, and reached the server after it`;
  }

  /** Who did what when, ms on this process's clock (performance.now()), in the order they happened. */
  #timeline(id: number): string {
    const events: [number, string][] = [];
    const add = (column: Column, what: string): void => {
      const t = this.#get(id, column);
      if (!Number.isNaN(t)) events.push([t, what]);
    };
    if (this.crashedAt !== undefined) events.push([this.crashedAt, "the server crashed"]);
    add("requestT", "client sent the request");
    add("arrivedT", "its POST reached the server");
    add("tookT", "server took it up");
    add("answeredT", "server wrote its response");
    add("clientCancelT", "client sent the notification");
    add("cancelArrivedT", "the notification's POST reached the server");
    add("cancelT", "server got the notification");
    events.sort((a, b) => a[0] - b[0]);
    return events.length === 0 ? "nothing logged" : events.map(([t, what]) => `${what} at ${t.toFixed(1)}`).join(", ");
  }
}

const num = (value: number): number => (Number.isNaN(value) ? 0 : value);
