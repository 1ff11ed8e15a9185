// The records file of a replica, shared by its relay and every session: each JSON line gets the
// replica's name and the client's session (`--records`; the fleet reads one file per replica and
// sees which replica and which session each request was on). A session's shutdown ends its
// records stream: here that only stops its own lines, the file stays open for the others.
import type { WriteStream } from "node:fs";

/**
 * A `WriteStream`-shaped view of `file` for one session: `write(line)` appends the line with
 * `replica` and `clientSessionId` added, `end()` ends only this view.
 */
export function recordsFor(
  file: WriteStream | undefined,
  replica: string,
  facts: { readonly session: string | null },
): WriteStream | undefined {
  if (file === undefined) return undefined;
  let ended = false;
  const view = {
    get writableEnded(): boolean {
      return ended || file.writableEnded;
    },
    write(line: string): boolean {
      if (ended || file.writableEnded) return false;
      return file.write(withFields(line, replica, facts.session));
    },
    end(done?: () => void): void {
      ended = true;
      done?.();
    },
  };
  return view as unknown as WriteStream;
}

/** A JSON Lines record (`{...}\n`) with `replica` and `clientSessionId` added. */
export function withFields(line: string, replica: string, session: string | null): string {
  const body = line.trimEnd();
  if (!body.endsWith("}")) return line;
  const more = `${JSON.stringify(replica)},"clientSessionId":${JSON.stringify(session)}`;
  return `${body.slice(0, -1)}${body === "{}" ? "" : ","}"replica":${more}}\n`;
}
