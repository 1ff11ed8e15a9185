// What the HTTP front checks before a request reaches MCP: the Host and Origin headers (the
// specification's DNS-rebinding rule for local servers: "Servers MUST validate the Origin header
// on all incoming connections"), and the bearer token. No message here ever contains what the
// client sent as a token.
import { createHash, timingSafeEqual } from "node:crypto";
import type { ListenOptions } from "./args.js";

/** Host names a loopback bind answers to, and origins always allowed (a page served from this machine). */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

/** A refusal: the HTTP status, a fixed message, and headers. */
export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/**
 * The `Host` header on a loopback bind: only localhost names, the address bound (an IP literal,
 * such as 127.0.0.5: no DNS name, so nothing to rebind; the URL the front prints names it), and
 * `--allow-host` ones. A DNS rebinding page reaches 127.0.0.1 under its own host name; it is
 * refused here. A bind on another address is reached under names of the operator's choosing (a
 * load balancer's), and the token guards it instead.
 */
export function checkHost(host: string | undefined, listen: ListenOptions): Refusal | undefined {
  if (!listen.loopback) return undefined;
  let name: string;
  try {
    name = new URL(`http://${host ?? ""}`).hostname.toLowerCase();
  } catch {
    return { status: 403, message: "Forbidden: invalid Host header" };
  }
  const bound = listen.host.includes(":") ? `[${listen.host}]` : listen.host.toLowerCase();
  if (host === undefined || host === "" || (!LOOPBACK_NAMES.includes(name) && name !== bound && !listen.allowHosts.includes(name))) {
    return { status: 403, message: "Forbidden: this Host is not allowed (DNS rebinding protection; see --allow-host)" };
  }
  return undefined;
}

/**
 * The `Origin` header: absent (not a browser) passes; a localhost origin or one given with
 * `--allow-origin` passes; anything else, `null` included, is refused.
 */
export function checkOrigin(origin: string | undefined, listen: ListenOptions): Refusal | undefined {
  if (origin === undefined || origin === "") return undefined;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    // `null` (a sandboxed page, a file: URL) included: said as it came, with the option that admits origins.
    return {
      status: 403,
      message: `Forbidden: the Origin ${JSON.stringify(origin.slice(0, 200))} is no origin this front admits (localhost, or one given with --allow-origin)`,
    };
  }
  if ((url.protocol === "http:" || url.protocol === "https:") && LOOPBACK_NAMES.includes(url.hostname)) return undefined;
  if (listen.allowOrigins.includes(url.origin) && url.origin === origin) return undefined;
  return { status: 403, message: "Forbidden: this Origin is not allowed (see --allow-origin)" };
}

/**
 * The bearer token, compared in constant time (both sides hashed to the same length first, so
 * neither the content nor the length of the token leaks through the time taken).
 */
export function checkToken(authorization: string | undefined, expected: string | undefined): Refusal | undefined {
  if (expected === undefined) return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "");
  const given = match?.[1] ?? "";
  const ok = timingSafeEqual(digest(given), digest(expected)) && given !== "";
  if (ok) return undefined;
  return {
    status: 401,
    message: "Unauthorized: send Authorization: Bearer <token>",
    headers: { "www-authenticate": `Bearer realm="mcp-cancellable", error="invalid_token"` },
  };
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Takes the secrets out of a text; `active`: there are secrets to take out. */
export type Redact = ((text: string) => string) & { readonly active: boolean };

/** The short JSON escapes (`\"`, `\n`...), by the character they stand for; every other one is `\uXXXX`. */
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '"': '"', "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t" };

/**
 * A regular expression's source matching a secret in each form it takes in the texts the proxy
 * relays and writes: as it is (a tool's text, a log line), and JSON-escaped, once or more (a
 * message's JSON; an upstream's error body quoted in an error message, that message in a JSON
 * answer, then in a `--records` line). Each UTF-16 unit of the secret is matched raw, as its short
 * escape (`\"`, `\/`, `\t`...) or as `\uXXXX` in either case, behind any run of backslashes (one
 * per JSON level, doubled at each); a backslash itself is one backslash or an even run. An outside
 * tester's token with a `"` in it was matched only raw, and reached the client as `\"`.
 */
function secretPattern(secret: string): string {
  let source = "";
  for (const char of secret.split("")) {
    const hex = char.charCodeAt(0).toString(16).padStart(4, "0");
    const escaped = String.raw`\\+u${hex.replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`)}`;
    if (char === "\\") {
      source += String.raw`(?:(?:\\\\)+|\\|${escaped})`;
      continue;
    }
    const short = SHORT_ESCAPES[char];
    // The unit itself as `\uXXXX` in the expression: matched raw, whatever it is (nothing to escape wrongly).
    source += `(?:${unitOf(char)}|${escaped}${short === undefined ? "" : String.raw`|\\+${unitOf(short)}`})`;
  }
  return source;
}

/** A regular expression's source for one UTF-16 unit, as `\uXXXX`. */
function unitOf(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * A function removing each secret (the upstream's `--header` values, the front's token) from
 * text a client or a log may see, longest first, in every form `secretPattern` names. Text that
 * is JSON goes through `redactJsonText` (a replacement next to an escape must not break it).
 */
export function redactor(secrets: readonly string[]): Redact {
  const list = [...new Set(secrets.filter((secret) => secret.length >= 4))].sort((a, b) => b.length - a.length);
  if (list.length === 0) return Object.assign((text: string) => text, { active: false });
  const pattern = new RegExp(list.map(secretPattern).join("|"), "g");
  return Object.assign((text: string) => text.replace(pattern, "[redacted]"), { active: true });
}

/** The secrets of an HTTP upstream's `--header` values: each whole value, and its last word (a bearer token). */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  return Object.values(headers).flatMap((value) => [value, value.split(/\s+/).pop() ?? ""]);
}

/**
 * A message for a client with the secrets taken out of it, wherever they are: an upstream may
 * echo what it was sent, the `--header` token included, in an error or in a tool's result. Each
 * string (keys too) is redacted as it is decoded, so a secret is found whatever JSON would escape
 * in it, and the message stays a message. The same object when none is in it (or there are no
 * secrets: nothing is looked at then).
 */
export function redactMessage<M>(message: M, redact: Redact): M {
  if (!redact.active) return message;
  return redactValue(message, redact) as M;
}

/** `value` with each string in it redacted: the same value when nothing changed. */
function redactValue(value: unknown, redact: Redact): unknown {
  if (typeof value === "string") return redact(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = redactValue(value[i], redact);
      if (item !== value[i]) (out ??= [...value])[i] = item;
    }
    return out ?? value;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const entry = [redact(key), redactValue(item, redact)] as const;
    if (entry[0] !== key || entry[1] !== item) changed = true;
    return entry;
  });
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * A JSON text (a `--records` line, a relayed line kept as it came) with the secrets taken out.
 * Replaced in the text, which keeps it as it was elsewhere; if a replacement next to a run of
 * backslashes left it no longer JSON, the text is parsed, redacted string by string and written
 * again (its number forms may change then: only a text holding a secret pays that).
 */
export function redactJsonText(text: string, redact: Redact): string {
  if (!redact.active) return text;
  const clean = redact(text);
  if (clean === text) return text;
  try {
    JSON.parse(clean);
    return clean;
  } catch {
    const end = /\s*$/.exec(text)?.[0] ?? "";
    return `${JSON.stringify(redactValue(JSON.parse(text), redact))}${end}`;
  }
}
