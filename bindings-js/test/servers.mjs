// Real servers for the tests and benchmarks of `Collection.openRemote`: nginx (a static server
// with Range, ETag and If-Match; Debian's nginx-light, which `make test` installs) and
// scripts/range-proxy.mjs (latency and faults) in front of it — the same pair as the native
// tests (host-native/tests/support/servers.rs).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A port nothing listens on now. */
function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (s.address());
      s.close(() => res(port));
    });
  });
}

/** Resolves once something accepts connections on `port`; rejects if `child` exits first. */
async function waitFor(port, child, what) {
  const t = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited: ${child.exitCode}`);
    const ok = await new Promise((res) => {
      const c = connect(port, "127.0.0.1", () => (c.end(), res(true)));
      c.on("error", () => res(false));
    });
    if (ok) return;
    if (Date.now() - t > 20_000) throw new Error(`${what} did not start`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * nginx serving a folder of its own (`www`) on 127.0.0.1.
 * @returns {Promise<{ base: string, www: string, put: (name: string, bytes: Uint8Array) => string, stop: () => void }>}
 */
export async function startNginx() {
  const nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
  if (!nginx) throw new Error("nginx is needed (Debian nginx-light; `make test` installs it)");
  const d = mkdtempSync(join(tmpdir(), "shoal-nginx-"));
  const www = join(d, "www");
  mkdirSync(join(www, "tmp"), { recursive: true });
  // A free port may be taken by another test's server before nginx binds it: nginx then
  // exits (bind fails), and it is started again on another port.
  let child;
  let port;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const conf = `daemon off; master_process off; worker_processes 1; error_log ${d}/error.log; pid ${d}/nginx.pid;
events { worker_connections 256; }
http { access_log off; client_body_temp_path ${d}/tmp; proxy_temp_path ${d}/tmp;
  fastcgi_temp_path ${d}/tmp; uwsgi_temp_path ${d}/tmp; scgi_temp_path ${d}/tmp;
  types { application/wasm wasm; text/javascript js mjs; text/html html; application/json json; }
  server { listen 127.0.0.1:${port}; root ${www}; location / { } } }
`;
    writeFileSync(join(d, "nginx.conf"), conf);
    child = spawn(nginx, ["-p", d, "-c", join(d, "nginx.conf")], { stdio: ["ignore", "ignore", "ignore"] });
    try {
      await waitFor(port, child, "nginx");
      // (Something else may have answered on the port: nginx must still be running.)
      await new Promise((r) => setTimeout(r, 100));
      if (child.exitCode === null) break;
    } catch (e) {
      if (attempt >= 4) throw e;
    }
    if (attempt >= 4) throw new Error(`nginx did not start: ${d}/error.log`);
  }
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    www,
    /** Serves `bytes` as `name` (written beside, then renamed into place: a replaced object
     * gets a new ETag). */
    put(name, bytes) {
      const tmp = join(www, "tmp", name.replaceAll("/", "_"));
      mkdirSync(dirname(join(www, name)), { recursive: true });
      writeFileSync(tmp, bytes);
      renameSync(tmp, join(www, name));
      return `${base}/${name}`;
    },
    stop() {
      child.kill("SIGKILL");
      rmSync(d, { recursive: true, force: true });
    },
  };
}

/**
 * scripts/range-proxy.mjs in front of `upstream`, adding `latencyMs` to every request.
 * @param {string} upstream
 */
export async function startProxy(upstream, latencyMs = 0) {
  const child = spawn(process.execPath, [join(root, "scripts/range-proxy.mjs"), "--upstream", upstream, "--latency-ms", String(latencyMs)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise((res, rej) => {
    const rl = createInterface({ input: /** @type {any} */ (child.stdout) });
    rl.once("line", (l) => (rl.close(), res(l)));
    child.once("exit", (code) => rej(new Error(`the proxy exited: ${code}`)));
  });
  const base = String(line).trim().replace(/^listening on /, "");
  const control = async (method, path) => (await fetch(base + path, { method })).text();
  return {
    base,
    /** The next `times` requests (all, without `times`) get fault `mode` (see the script). */
    fault: (mode, times) => control("POST", `/__fault?mode=${mode}${times ? `&times=${times}` : ""}`),
    /** Clears the fault and the counters. */
    reset: () => control("POST", "/__reset"),
    /** `{ requests, bytes }` since the last reset. */
    stats: async () => JSON.parse(await control("GET", "/__stats")),
    stop: () => child.kill("SIGKILL"),
  };
}
