import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type * as Root from "../../src/index.js";
import type * as Stdio from "../../src/adapters/stdio/index.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const outDir = `${repo}bench/.tmp/build`;
const httpEntry = `${repo}src/adapters/streamable-http/index.ts`;

/** The Streamable HTTP adapter's module, as far as the bench needs it (its API is checked at run time). */
export interface HttpModule {
  streamableHttpCancellation: (transport: never, options?: { flushTimeoutMs?: number }) => unknown;
  cancellableFetch: (options?: object) => (url: string | URL, init?: RequestInit) => Promise<Response>;
}

/** The library under test, as built for users. */
export interface Subject {
  root: typeof Root;
  stdio: typeof Stdio;
  /** `null` until src/adapters/streamable-http/index.ts exists. */
  http: HttpModule | null;
  /** How it was built, for the report. */
  build: string;
}

/**
 * Builds the library the way it ships (bench/lib/build.ts: tsup, the ESM half of tsup.config.ts,
 * in a child process) into bench/.tmp/build and imports it. The bench measures
 * that build, not src/ through tsx: tsx compiles with esbuild's keepNames, which wraps every
 * function expression in a `__name(...)` call and so adds work per call that users never pay.
 */
export async function loadSubject(): Promise<Subject> {
  const entry: Record<string, string> = {
    index: `${repo}src/index.ts`,
    stdio: `${repo}src/adapters/stdio/index.ts`,
  };
  const hasHttp = existsSync(httpEntry);
  if (hasHttp) entry["streamable-http"] = httpEntry;
  execFileSync(
    process.execPath,
    ["--import", "tsx", `${repo}bench/lib/build.ts`, outDir, ...Object.entries(entry).map(([name, path]) => `${name}=${path}`)],
    { cwd: repo, stdio: ["ignore", "ignore", "inherit"] },
  );
  const load = async <T>(name: string): Promise<T> => (await import(pathToFileURL(`${outDir}/${name}.js`).href)) as T;
  const http = hasHttp ? await load<Partial<HttpModule>>("streamable-http") : null;
  return {
    root: await load<typeof Root>("index"),
    stdio: await load<typeof Stdio>("stdio"),
    http:
      typeof http?.streamableHttpCancellation === "function" && typeof http.cancellableFetch === "function" ? (http as HttpModule) : null,
    build: "tsup (ESM, target node20, as tsup.config.ts) into bench/.tmp/build",
  };
}
