// The page's script, bundled by esbuild for the browser with the library (dist/) and the v2
// client: runs the HTTP checks against the server named in ?server= and leaves the results (and
// every record) on globalThis.__mcpResults for the driver.
import { runChecks } from "./checks.mjs";

const url = new URL(location.href).searchParams.get("server");
runChecks({ url, browser: true }).then(
  (results) => {
    globalThis.__mcpResults = { results, userAgent: navigator.userAgent };
  },
  (error) => {
    globalThis.__mcpResults = { results: [{ name: "page", ok: false, error: String(error), records: [] }], userAgent: navigator.userAgent };
  },
);
