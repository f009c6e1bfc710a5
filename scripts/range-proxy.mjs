#!/usr/bin/env node
// A test proxy in front of a static HTTP server (nginx in the tests): forwards every GET with
// its Range and If-Match headers, and on demand adds latency or answers what a real server,
// CDN or network sometimes does — so that a reader by byte ranges can be shown to give a typed
// error or the right answer, never a wrong one.
//
//   node scripts/range-proxy.mjs --upstream http://127.0.0.1:PORT [--port 0] [--latency-ms 0] [--keep-host]
//
// --keep-host forwards the client's Host header unchanged (an S3 client signs it: a request
// signed for the proxy's address then verifies upstream); by default Host names the upstream
// (a presigned URL of the upstream, its host replaced by the proxy's, then verifies).
// Prints `listening on http://127.0.0.1:PORT` once ready. Control endpoints (not forwarded):
//   GET  /__stats          {"requests": N, "bytes": B} since the last reset
//   POST /__reset          zeroes the counters and clears the fault
//   POST /__fault?mode=M&times=T&path=P   the next T forwarded requests (default: all) whose
//        path starts with P (default: any) get fault M:
//        status-NNN         answer NNN without forwarding
//        truncate           forward, but end the body halfway (the declared length unchanged)
//        flip               forward, with one byte of the body changed
//        ignore-range       forward without Range (the server sends the whole object, 200)
//        wrong-range        forward, then say the body starts 64 bytes later (Content-Range)
//        etag               forward, with another ETag
import http from "node:http";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const upstream = new URL(opt("upstream"));
const latency = Number(opt("latency-ms", "0"));
const keepHost = args.includes("--keep-host");
let stats = { requests: 0, bytes: 0 };
let fault = null; // { mode, times }

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function takeFault(path) {
  if (!fault || (fault.path !== null && !path.startsWith(fault.path))) return null;
  const mode = fault.mode;
  if (fault.times !== null && --fault.times <= 0) fault = null;
  return mode;
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/__stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(stats));
  }
  if (url.pathname === "/__reset") {
    stats = { requests: 0, bytes: 0 };
    fault = null;
    return res.end("ok");
  }
  if (url.pathname === "/__fault") {
    const times = url.searchParams.get("times");
    fault = { mode: url.searchParams.get("mode"), times: times === null ? null : Number(times), path: url.searchParams.get("path") };
    return res.end("ok");
  }
  stats.requests += 1;
  if (latency > 0) await sleep(latency);
  const mode = takeFault(url.pathname);
  if (mode && mode.startsWith("status-")) {
    res.writeHead(Number(mode.slice(7)), { "content-type": "text/plain" });
    return res.end("injected\n");
  }
  const headers = { ...req.headers, host: keepHost ? req.headers.host : upstream.host };
  if (mode === "ignore-range") delete headers.range;
  const up = http.request(
    { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
    (ur) => {
      const chunks = [];
      ur.on("data", (c) => chunks.push(c));
      ur.on("end", () => {
        let body = Buffer.concat(chunks);
        const out = { ...ur.headers };
        if (mode === "flip" && body.length > 0) {
          body = Buffer.from(body);
          body[body.length >> 1] ^= 0x40;
        }
        if (mode === "wrong-range" && out["content-range"]) {
          const m = /bytes (\d+)-(\d+)\/(\d+|\*)/.exec(out["content-range"]);
          if (m) out["content-range"] = `bytes ${Number(m[1]) + 64}-${Number(m[2]) + 64}/${m[3]}`;
        }
        if (mode === "etag") out.etag = '"replaced-0"';
        stats.bytes += body.length;
        res.writeHead(ur.statusCode, out);
        if (mode === "truncate") {
          // The declared length stays: the client sees the connection end early.
          res.write(body.subarray(0, body.length >> 1));
          return res.destroy();
        }
        res.end(body);
      });
    },
  );
  up.on("error", (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  up.end();
});

server.listen(Number(opt("port", "0")), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
