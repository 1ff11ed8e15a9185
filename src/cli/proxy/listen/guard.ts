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

/**
 * A function removing each secret (the upstream's `--header` values, the front's token) from
 * text a client or a log may see, longest first.
 */
export function redactor(secrets: readonly string[]): Redact {
  const list = [...new Set(secrets.filter((secret) => secret.length >= 4))].sort((a, b) => b.length - a.length);
  if (list.length === 0) return Object.assign((text: string) => text, { active: false });
  return Object.assign(
    (text: string) => {
      let out = text;
      for (const secret of list) out = out.split(secret).join("[redacted]");
      return out;
    },
    { active: true },
  );
}

/** The secrets of an HTTP upstream's `--header` values: each whole value, and its last word (a bearer token). */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  return Object.values(headers).flatMap((value) => [value, value.split(/\s+/).pop() ?? ""]);
}

/**
 * A message for a client with the secrets taken out of it, wherever they are: an upstream may
 * echo what it was sent, the `--header` token included, in an error or in a tool's result. The
 * same object when none is in it (or there are no secrets: nothing is serialised then).
 */
export function redactMessage<M>(message: M, redact: Redact): M {
  if (!redact.active) return message;
  const text = JSON.stringify(message);
  const clean = redact(text);
  return clean === text ? message : (JSON.parse(clean) as M);
}
