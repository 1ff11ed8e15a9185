import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { UsageError } from "../../../src/cli/args.js";
import { AUTH_TOKEN_ENV, FRONT_DEFAULTS, splitListenArgs } from "../../../src/cli/proxy/listen/args.js";
import { checkOrigin, checkToken, redactor } from "../../../src/cli/proxy/listen/guard.js";
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
});

describe("proxy --listen: guards", () => {
  const listen = splitListenArgs(["--listen", "127.0.0.1:0", "--allow-origin", "https://app.example.com"], {}).listen!;

  it("Origin: absent and localhost pass; an allowed origin passes exactly; everything else is 403", () => {
    expect(checkOrigin(undefined, listen)).toBeUndefined();
    expect(checkOrigin("http://127.0.0.1:3000", listen)).toBeUndefined();
    expect(checkOrigin("https://app.example.com", listen)).toBeUndefined();
    for (const origin of ["https://app.example.com:444", "null", "file://", "https://evil.example", "chrome-extension://abc"]) {
      expect(checkOrigin(origin, listen)?.status, origin).toBe(403);
    }
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
});
