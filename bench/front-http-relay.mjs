// The floor of any HTTP proxy in Node, for bench/front.ts: a reverse proxy that copies each
// request to TARGET and its response back, byte for byte, with node:http and a keep-alive agent
// (no parsing, no MCP). Prints `LISTENING <port>`. Run as a child: node bench/front-http-relay.mjs TARGET_PORT
import http from "node:http";

const target = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true });
const server = http.createServer((req, res) => {
  const upstream = http.request(
    { host: "127.0.0.1", port: target, path: req.url, method: req.method, headers: req.headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", () => res.destroy());
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`LISTENING ${server.address().port}\n`));
