import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UsageError } from "../../../src/cli/args.js";
import { runProxyCommand } from "../../../src/cli/proxy/command.js";
import { AUTH_TOKEN_ENV, FRONT_DEFAULTS, splitListenArgs } from "../../../src/cli/proxy/listen/args.js";
import { checkOrigin, checkToken, redactJsonText, redactMessage, redactor } from "../../../src/cli/proxy/listen/guard.js";
import { tempDir } from "../helpers.js";

// The HTTP front's flags, taken out before the stdio proxy's own parser sees the rest, and the
// guards' pure parts.
const dirs: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of dirs.splice(0)) cleanup();
});
const usage = (argv: string[], env: NodeJS.ProcessEnv = {}): string => {
  try {
    splitListenArgs(argv, env);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("no usage error");
};

describe("proxy --listen: arguments", () => {
  it("takes its own flags out and leaves the rest, the server's command included, for the proxy's parser", () => {
    const { listen, rest } = splitListenArgs(
      ["--listen", "127.0.0.1:0", "--timeout-ms", "5", "--path=/x", "--", "node", "s.js", "--listen", "y"],
      {},
    );
    expect(listen).toMatchObject({ host: "127.0.0.1", port: 0, path: "/x", loopback: true, token: undefined });
    expect(rest).toEqual(["--timeout-ms", "5", "--", "node", "s.js", "--listen", "y"]);
    expect(splitListenArgs(["--listen", ":8080"], {}).listen).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      maxSessions: FRONT_DEFAULTS.maxSessions,
    });
    expect(splitListenArgs(["--listen", "[::1]:9"], {}).listen).toMatchObject({ host: "::1", loopback: true });
    expect(splitListenArgs(["--timeout-ms", "5"], {})).toEqual({ listen: undefined, rest: ["--timeout-ms", "5"] });
  });

  it("bad values are refused naming the flag; a token is never printed", () => {
    expect(usage(["--path", "/mcp"])).toContain("--path is an option of the HTTP front: give --listen");
    expect(usage(["--listen", "nowhere"])).toContain("--listen: expected <host:port>");
    expect(usage(["--listen", "127.0.0.1:70000"])).toContain("--listen");
    expect(usage(["--listen", "127.0.0.1:0", "--path", "/healthz"])).toContain("--path");
    expect(usage(["--listen", "127.0.0.1:0", "--max-sessions", "0"])).toContain("--max-sessions: expected 1 to");
    expect(usage(["--listen", "127.0.0.1:0", "--replica", "bad name"])).toContain("--replica");
    expect(usage(["--listen", "127.0.0.1:0", "--allow-origin", "https://a.example/path"])).toContain("--allow-origin");
    expect(usage(["--listen", "10.1.2.3:0"])).toContain(AUTH_TOKEN_ENV);
    const short = usage(["--listen", "127.0.0.1:0"], { [AUTH_TOKEN_ENV]: "short-secret" });
    expect(short).toContain("at least 16 characters");
    expect(short).not.toContain("short-secret");
    const dir = tempDir();
    dirs.push(dir.cleanup);
    const file = join(dir.dir, "token");
    writeFileSync(file, "  file-token-0123456789abcdef\n");
    expect(splitListenArgs(["--listen", "0.0.0.0:0", "--auth-token-file", file], {}).listen).toMatchObject({
      loopback: false,
      token: "file-token-0123456789abcdef",
    });
  });

  // An outside tester's: the ":" was optional, so the last digits of an address were its port
  // (127.0.0.1 was host "127.0.0." port 1, refused as not loopback, or with a token an exit 1 on
  // getaddrinfo; 127.0.0.10 listened on 127.0.0.1 at a random port; 8080 was host "808" port 0).
  it("--listen needs host:port: an address without a port, or a bad port, is a usage error (exit 2) naming --listen and the form; a bare port is 127.0.0.1's", async () => {
    const TOKEN = { [AUTH_TOKEN_ENV]: "listen-token-0123456789abcdef" };
    for (const value of ["127.0.0.1", "127.0.0.10", "192.168.1.10", "localhost", "[::1]", "0.0.0.0", "127.0.0.1:"]) {
      for (const env of [{}, TOKEN]) {
        const message = usage(["--listen", value], env);
        expect(message, value).toContain("--listen: expected <host:port> such as 127.0.0.1:8080 or [::1]:8080");
        expect(message, value).toContain(JSON.stringify(value));
        expect(message, value).toContain("the port is missing");
        expect(message, value).not.toContain("loopback");
      }
    }
    for (const value of ["127.0.0.1:65536", "[::1]:99999", "::1", "127.0.0.1:80x", "host:port"]) {
      expect(usage(["--listen", value], TOKEN), value).toContain("--listen: expected <host:port>");
    }
    expect(usage(["--listen", "127.0.0.1:65536"])).toContain("65536 is not a port");
    // What the docs promise still holds: a bare port or ":port" is 127.0.0.1's, port 0 picks a free one.
    const parsed = (value: string) => {
      const { host, port } = splitListenArgs(["--listen", value], TOKEN).listen!;
      return { host, port };
    };
    expect(parsed("8080")).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(parsed(":0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parsed("127.0.0.10:0")).toEqual({ host: "127.0.0.10", port: 0 });
    expect(parsed("192.168.1.10:65535")).toEqual({ host: "192.168.1.10", port: 65_535 });
    expect(parsed("[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parsed("localhost:1")).toEqual({ host: "localhost", port: 1 });
    // The command: exit status 2 with the usage hint, before anything is started.
    let stderr = "";
    const code = await runProxyCommand(["--listen", "127.0.0.1", "--", process.execPath, "-e", ""], {
      stdout: () => {},
      stderr: (text) => void (stderr += text),
    });
    expect(code).toBe(2);
    expect(stderr).toContain(
      '--listen: expected <host:port> such as 127.0.0.1:8080 or [::1]:8080 (port 0 to 65535; 0 picks a free one), got "127.0.0.1"',
    );
    expect(stderr).toContain("--help");
  });
});

describe("proxy --listen: guards", () => {
  const listen = splitListenArgs(["--listen", "127.0.0.1:0", "--allow-origin", "https://app.example.com"], {}).listen!;

  it("Origin: absent and localhost pass; an allowed origin passes exactly; everything else is 403", () => {
    expect(checkOrigin(undefined, listen)).toBeUndefined();
    expect(checkOrigin("http://127.0.0.1:3000", listen)).toBeUndefined();
    expect(checkOrigin("https://app.example.com", listen)).toBeUndefined();
    for (const origin of ["https://app.example.com:444", "null", "file://", "https://evil.example", "chrome-extension://abc"]) {
      expect(checkOrigin(origin, listen)?.status, origin).toBe(403);
      // Each refusal names the option that admits origins (an outside tester's: `null` got "invalid Origin header" alone).
      expect(checkOrigin(origin, listen)?.message, origin).toContain("--allow-origin");
    }
    expect(checkOrigin("null", listen)?.message).toBe(
      'Forbidden: the Origin "null" is no origin this front admits (localhost, or one given with --allow-origin)',
    );
  });

  it("the token: only the exact bearer token passes", () => {
    const token = "the-token-0123456789";
    expect(checkToken(`Bearer ${token}`, token)).toBeUndefined();
    expect(checkToken(`bearer ${token}`, token)).toBeUndefined();
    for (const header of [undefined, "", "Bearer", `Bearer ${token} x`, `Basic ${token}`, `Bearer ${token.toUpperCase()}`]) {
      expect(checkToken(header, token)?.status, String(header)).toBe(401);
    }
    expect(checkToken(undefined, undefined)).toBeUndefined();
  });

  it("redaction: each secret, longest first", () => {
    const redact = redactor(["Bearer abcdefgh12345", "abcdefgh12345", "x"]);
    expect(redact("sent Bearer abcdefgh12345 and abcdefgh12345")).toBe("sent [redacted] and [redacted]");
    expect(redactor([])("same")).toBe("same");
  });

  // An outside tester's token with a `"` reached the client: it was looked for only as it is, in
  // JSON text where it is `\"`. Every form a secret takes in what the proxy relays or writes.
  it("redaction: a secret with a quote, a backslash, a newline, a tab or non-ASCII letters, raw and JSON-escaped once, twice, as \\uXXXX or \\/", () => {
    const secrets = ['tok"en\\x/y-0123', "line\none\ttab-4567", "clé-ünï€😀-89ab"];
    const redact = redactor(secrets);
    /** JSON with every non-ASCII unit as \uXXXX in upper case and `/` as `\/` (Python's and PHP's defaults). */
    const ascii = (text: string): string =>
      text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`).replaceAll("/", "\\/");
    for (const secret of secrets) {
      const message = {
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32602, message: `bad credentials: Bearer ${secret}`, data: { body: JSON.stringify({ sent: secret }) } },
      };
      const once = JSON.stringify(message);
      for (const text of [secret, once, JSON.stringify({ record: once }), ascii(once), JSON.stringify({ log: ascii(once) })]) {
        const clean = redact(text);
        expect(clean, text).toContain("[redacted]");
        // Each secret ends in four plain characters: left anywhere, in any encoding, they would show.
        expect(clean, text).not.toContain(secret.slice(-4));
        for (const form of [secret, JSON.stringify(secret).slice(1, -1), JSON.stringify(JSON.stringify(secret)).slice(2, -2)]) {
          expect(clean, text).not.toContain(form);
        }
        if (text !== secret) expect(() => JSON.parse(redactJsonText(text, redact))).not.toThrow();
      }
      const clean = redactMessage(message, redact);
      expect(clean.error.message).toBe("bad credentials: Bearer [redacted]");
      expect(JSON.parse(clean.error.data.body)).toEqual({ sent: "[redacted]" });
    }
    // A backslash run next to a secret: the line stays JSON (written again from its value when the text's replacement broke it).
    const line = JSON.stringify({ a: `\\${secrets[0]}\\`, n: 1 });
    expect(JSON.parse(redactJsonText(line, redact))).toEqual({ a: "\\[redacted]\\", n: 1 });
    const untouched = { id: 1, result: { text: "nothing secret" } };
    expect(redactMessage(untouched, redact)).toBe(untouched);
  });
});
