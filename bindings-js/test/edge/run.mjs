// The npm package at the edge: runs the shared scenario (bindings-js/test/scenario.mjs) in every
// runtime and checks each result is identical (ids, f32 score bits, segment bytes) to Node's.
//
//   make test-edge      (installs the runtimes, builds the package, runs this)
//   node bindings-js/test/edge/run.mjs [--only deno,chromium,workerd,pack,wrangler]
//
//   node      the reference: SIMD128 build, and the scalar build (must equal it)
//   deno      Deno (npm package `deno`), both builds, wasm read from the package by file URL
//   chromium  headless Chromium (/usr/bin/chromium via playwright-core); the package served
//             over HTTP on 127.0.0.1, wasm fetched relative to the module (both builds) and
//             given as a Response
//   workerd   Cloudflare's runtime (npm package `workerd`) running examples/cloudflare-worker:
//             the scenario inside the worker, and searches over the bundled segment
//             compared with the same searches in Node; a second worker runs the scalar module
//   pack      `npm pack`, then `npm install --offline <tarball>` into an empty project and the
//             scenario there through `import "shoal"`
//   wrangler  (after pack) the example worker bundled by `wrangler deploy --dry-run` in that
//             project, the bundle served by workerd and its searches compared with Node's
//
// Prints one line per check and "N passed, N failed"; exits non-zero on any failure. Servers
// and child processes it starts are stopped before it exits.
import { spawn } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { check, finish } from "./checks.mjs";
import { shoalServe } from "./serve.mjs";
import { startNginx, startProxy } from "../servers.mjs";

const here = dirname(fileURLToPath(import.meta.url)); // bindings-js/test/edge
const pkgDir = resolve(here, "../.."); // bindings-js
const root = resolve(pkgDir, ".."); // repository
const workDir = join(root, "target", "edge");
mkdirSync(workDir, { recursive: true });
// playwright-core, workerd, deno and wrangler are installed by `make setup-edge` into their own folder
// (pinned versions, no lockfile: the registry here lacks their other platforms' binaries,
// which a lockfile of the root package would have to list).
const tools = resolve(process.env.SHOAL_EDGE_TOOLS ?? join(workDir, "tools"));
const bin = (name) => join(tools, "node_modules", ".bin", name);
const SETUP_HINT = "run `make setup-edge`";

const onlyArg = process.argv.indexOf("--only");
const only = onlyArg > 0 ? new Set(process.argv[onlyArg + 1].split(",")) : null;
const want = (name) => !only || only.has(name);

/** Runs a command; resolves { code, stdout, stderr }; kills it after `timeoutMs`. */
function run(cmd, args, { cwd = root, env = process.env, timeoutMs = 60_000 } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      resolvePromise({ code: -1, stdout, stderr: `${stderr}${e}` });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** The last JSON line a command printed, or an error result. */
async function runJson(cmd, args, opts) {
  const r = await run(cmd, args, opts);
  const line = r.stdout.trim().split("\n").pop() ?? "";
  if (r.code !== 0) return { error: `exit ${r.code}: ${r.stderr.trim().slice(-1500)}` };
  try {
    return JSON.parse(line);
  } catch {
    return { error: `no JSON output: ${r.stdout.slice(-500)} ${r.stderr.slice(-1000)}` };
  }
}

/** Index of the first differing character of two strings (for a readable failure). */
function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `first difference at char ${i}: ${JSON.stringify(a.slice(Math.max(0, i - 60), i + 60))} vs ${JSON.stringify(b.slice(Math.max(0, i - 60), i + 60))}`;
}

let reference = null; // JSON string of Node's SIMD128 summary

/** Checks a runtime's { info, summary } against the reference and the expected kernels. */
function compare(name, result, kernels) {
  if (!result || result.error) {
    check(name, false, result ? result.error : "no result");
    return;
  }
  if (result.info?.kernels !== kernels) {
    check(name, false, `expected kernels ${kernels}, got ${JSON.stringify(result.info)}`);
    return;
  }
  const got = JSON.stringify(result.summary);
  if (got === reference) check(name, true, `${kernels}, identical to node (${got.length} bytes of summary)`);
  else check(name, false, firstDiff(got, reference));
}

function freePort() {
  return new Promise((resolvePromise, reject) => {
    const srv = createNetServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolvePromise(port));
    });
  });
}

async function waitForHttp(url, timeoutMs, child) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child && child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

// ---- node (reference) ---------------------------------------------------------------------
async function node() {
  const cli = join(here, "cli.mjs");
  const simd = await runJson(process.execPath, [cli]);
  if (simd.error || simd.info?.kernels !== "simd128") {
    check("node simd128 (reference)", false, simd.error ?? JSON.stringify(simd.info));
    return false;
  }
  reference = JSON.stringify(simd.summary);
  writeFileSync(join(workDir, "scenario-node.json"), `${JSON.stringify(simd.summary, null, 1)}\n`);
  check("node simd128 (reference)", true, `${process.version}, summary in target/edge/scenario-node.json`);
  compare("node scalar", await runJson(process.execPath, [cli, "--scalar"]), "scalar");
  return true;
}

// ---- deno ---------------------------------------------------------------------------------
async function deno() {
  const deno = bin("deno");
  if (!existsSync(deno)) {
    check("deno", false, `${deno} is missing (${SETUP_HINT})`);
    return;
  }
  const env = { ...process.env, DENO_DIR: join(workDir, "deno-dir"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  const args = ["run", "--no-config", "--no-lock", "--no-remote", `--allow-read=${pkgDir}`, join(here, "cli.mjs")];
  for (const [flag, kernels] of [
    [[], "simd128"],
    [["--scalar"], "scalar"],
  ]) {
    const r = await runJson(deno, [...args, ...flag], { env });
    compare(`deno ${kernels}${r.runtime ? ` (${r.runtime})` : ""}`, r, kernels);
  }
}

// ---- static server (chromium) -------------------------------------------------------------
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
};

/** Serves `dir` read-only on 127.0.0.1 (an ephemeral port). */
async function staticServer(dir) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = resolve(dir, `.${path}`);
    if (path.endsWith("/") && existsSync(join(file, "index.html"))) file = join(file, "index.html");
    if (!file.startsWith(dir + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
    createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/** Opens `url` in a new page of `context` and returns its `window.__shoalResult` (or `{ error }`
 * when the page threw). */
async function pageResult(context, url, timeout = 60_000) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  try {
    await page.goto(url, { timeout: 30_000 });
    await page.waitForFunction(() => window.__shoalResult !== undefined, null, { timeout });
    const r = await page.evaluate(() => window.__shoalResult);
    return errors.length ? { error: errors.join("; ") } : r;
  } finally {
    await page.close();
  }
}

// ---- persistence: OPFS and IndexedDB across two pages ---------------------------------------
async function persistence(browser, origin, version) {
  const context = await browser.newContext();
  const run = (phase) => pageResult(context, `${origin}/test/edge/persist.html?phase=${phase}`);
  try {
    const saved = await run("save");
    const opened = await run("open");
    const ok =
      !saved.error &&
      !opened.error &&
      saved.results.some((r) => r.length > 0) &&
      JSON.stringify(opened.opfs) === JSON.stringify(saved.results) &&
      JSON.stringify(opened.idb) === JSON.stringify(saved.results) &&
      opened.len === 3000 &&
      opened.missing === "not_found" &&
      opened.badStore === "NotFoundError";
    check(`chromium ${version}: saveToOPFS / saveToIndexedDB, reopened in a new page`, ok,
      ok ? `${saved.bytes} bytes; the same results from both stores` : JSON.stringify({ saved, opened }).slice(0, 600));
  } catch (e) {
    check("chromium: persistence", false, String(e));
  } finally {
    await context.close();
  }
}

// ---- cold start in Chromium (reported; a wall-clock number is never asserted) ---------------
async function coldStart(browser, origin, version) {
  const context = await browser.newContext();
  const load = (phase) => pageResult(context, `${origin}/test/edge/coldstart.html?phase=${phase}`, 120_000);
  try {
    const built = await load("build");
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await load("open"));
    const ok = !built.error && runs.every((r) => !r.error && r.points === 10);
    const med = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[2];
    const detail = ok
      ? `segment ${(built.bytes / 1e6).toFixed(1)} MB; median of 5 new pages: wasm transfer ${med("fetch").toFixed(1)} ms, ` +
        `init (compile + instantiate) ${med("init").toFixed(1)} ms, open from IndexedDB ${med("open").toFixed(1)} ms ` +
        `(fromBytes alone ${med("fromBytes").toFixed(1)} ms), first search ${med("search").toFixed(1)} ms`
      : JSON.stringify({ built, runs }).slice(0, 500);
    check(`chromium ${version}: cold start measured`, ok, detail);
    if (ok) writeFileSync(join(workDir, "coldstart-chromium.json"), `${JSON.stringify({ built, runs }, null, 1)}\n`);
  } catch (e) {
    check("chromium: cold start", false, String(e));
  } finally {
    await context.close();
  }
}

// ---- the Web Worker helper -----------------------------------------------------------------
async function workerHelper(browser, origin, version) {
  const context = await browser.newContext();
  try {
    const r = await pageResult(context, `${origin}/test/edge/worker.html`);
    const ok = !r.error && r.same.length === 8 && r.same.every(Boolean) && r.detached === 8 && r.err === "dimension_mismatch";
    check(`chromium ${version}: SearchWorker answers like the main thread, vectors transferred`, ok, JSON.stringify(r).slice(0, 400));
  } catch (e) {
    check("chromium: SearchWorker", false, String(e));
  } finally {
    await context.close();
  }
}

// ---- the browser example (examples/browser), with a screenshot ------------------------------
// Served twice: by a plain static server, and by the native host (`shoal serve --static-dir`).
async function browserExample(browser, version, host) {
  let origin;
  let close;
  try {
    if (host === "shoal serve") {
      ({ origin, close } = await shoalServe(root));
    } else {
      const { server, origin: o } = await staticServer(root);
      origin = o;
      close = () => server.close();
    }
  } catch (e) {
    check(`chromium: examples/browser served by ${host}`, false, String(e));
    return;
  }
  const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  try {
    await page.goto(`${origin}/examples/browser/?q=${encodeURIComponent("blue ceramic mug")}`, { timeout: 30_000 });
    await page.waitForFunction(() => window.__shoalExample !== undefined, null, { timeout: 60_000 });
    const r = await page.evaluate(() => window.__shoalExample);
    const rows = await page.locator("#results tr").count();
    const first = r.first;
    const ok =
      errors.length === 0 &&
      r.points === 10 &&
      rows === 10 &&
      first !== null &&
      first.in_stock === true &&
      first.price <= 60 &&
      /\b(blue|ceramic|mug)\b/.test(first.name);
    check(`chromium ${version}: examples/browser (served by ${host}) answers a hybrid search with filters`, ok,
      ok ? `first result "${first.name}" ${first.price} (${r.kernels})` : `result ${JSON.stringify(r)}, ${rows} rows; ${errors.join("; ")}`);
    const shot = join(workDir, host === "shoal serve" ? "browser-example-native-host.png" : "browser-example.png");
    await page.screenshot({ path: shot, fullPage: true });
    const bytes = existsSync(shot) ? statSync(shot).size : 0;
    check(`chromium: screenshot of the example after a search (served by ${host})`, bytes > 10_000, `${shot}, ${bytes} bytes`);
  } catch (e) {
    check(`chromium: examples/browser (served by ${host})`, false, `${e}; page errors: ${errors.join("; ")}`);
  } finally {
    await page.close();
    await close();
  }
}

// ---- Collection.openRemote in Chromium -------------------------------------------------------
// The page (test/edge/remote.html) and the package served by nginx through the fault proxy,
// the segments read by ranges from the same origin: every result equal to the native results
// of target/conformance/remote/ (ids and f32 score bits), both builds; a fault in transit
// retried, a 404 a typed error.
async function remoteInChromium(browser, version) {
  const dir = join(root, "target", "conformance", "remote");
  if (!existsSync(join(dir, "l2-1.json"))) {
    check("chromium: openRemote", false, `${dir} is missing (cargo test -p shoal-tests --test conformance writes it)`);
    return;
  }
  const nginx = await startNginx();
  const proxy = await startProxy(nginx.base);
  const context = await browser.newContext();
  try {
    const { symlinkSync } = await import("node:fs");
    symlinkSync(pkgDir, join(nginx.www, "shoal"));
    // The fixture folder as it is, the set's folder (set/) included.
    const serve = (sub) => {
      for (const e of readdirSync(join(dir, sub), { withFileTypes: true })) {
        const name = sub ? `${sub}/${e.name}` : e.name;
        if (e.isDirectory()) serve(name);
        else nginx.put(`remote/${name}`, readFileSync(join(dir, name)));
      }
    };
    serve("");
    const page = (name, extra = "") =>
      pageResult(context, `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/${name}.v2.shoal&fixture=/remote/${name}.json${extra}`);
    for (const name of ["l2-1", "cosine-2", "dot-4", "l2-3-codes", "l2-2-coded"]) {
      const f = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
      for (const [simd, kernels] of [["1", "simd128"], ["0", "scalar"]]) {
        const r = await page(name, `&simd=${simd}&bootstrap=${f.bootstrapLen}&repeat=2`);
        const same = !r.error && r.searches.length === 2 * f.requests.length &&
          r.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(f.results[i >> 1]));
        const ok = same && r.kernels === kernels && r.opened.requests === 1 && r.searches.every((s) => !s.warm || s.io.requests === 0);
        check(`chromium ${version}: openRemote ${name} (${kernels}) = native results, bit for bit; open 1 request, warm 0`, ok,
          r.error ? JSON.stringify(r).slice(0, 400) : `${r.searches.length} searches; first search of each request: mean ${(r.searches.filter((s) => !s.warm).reduce((a, s) => a + s.io.requests, 0) / f.requests.length).toFixed(1)} requests`);
      }
    }
    // A set of three segments from its manifest: the local set's results; open = the manifest,
    // then every segment's bootstrap region at once (1 + 3 requests).
    const set = JSON.parse(readFileSync(join(dir, "set.json"), "utf8"));
    for (const [simd, kernels] of [["1", "simd128"], ["0", "scalar"]]) {
      const r = await pageResult(context, `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/set/manifest.json&fixture=/remote/set.json&simd=${simd}`);
      const same = !r.error && r.searches.length === set.requests.length &&
        r.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(set.results[i]));
      check(`chromium ${version}: openRemote of a 3-segment set (${kernels}) = the local set's results, bit for bit; open 4 requests`,
        same && r.kernels === kernels && r.opened.requests === 1 + set.segments,
        r.error ? JSON.stringify(r).slice(0, 400) : `${r.searches.length} searches, open ${r.opened.requests} requests`);
    }
    // A set with payloads and text: text, hybrid and vector requests, payloads included.
    const text = JSON.parse(readFileSync(join(dir, "text.json"), "utf8"));
    for (const [simd, kernels] of [["1", "simd128"], ["0", "scalar"]]) {
      const r = await pageResult(context, `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/text/manifest.json&fixture=/remote/text.json&simd=${simd}`);
      const same = !r.error && r.searches.length === text.requests.length &&
        r.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(text.results[i]) && JSON.stringify(s.payloads) === JSON.stringify(text.payloads[i]));
      check(`chromium ${version}: openRemote of a set with payloads and text (${kernels}) = the local set's text, hybrid and payload answers, bit for bit`,
        same && r.kernels === kernels,
        r.error ? JSON.stringify(r).slice(0, 400) : `${r.searches.length} searches`);
    }
    // `persist`: the Cache API keeps what searches fetch across page loads (a context of its
    // own: its storage starts empty). No request for what an earlier page fetched; damaged
    // entries fetched again; a replaced object's entries never used.
    const persisting = await browser.newContext();
    try {
      const at = `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/text/manifest.json&fixture=/remote/text.json&persist=1&nostore=1`;
      const sameAs = (r) => !r.error && r.searches.length === text.requests.length &&
        r.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(text.results[i]) && JSON.stringify(s.payloads) === JSON.stringify(text.payloads[i]));
      const sum = (r, f) => r.searches.reduce((a, s) => a + f(s.io), 0);
      const first = await pageResult(persisting, at);
      const second = await pageResult(persisting, at);
      check(`chromium ${version}: persist — a page loaded again answers the same with no request but its open's (the manifest and bootstraps)`,
        sameAs(first) && sameAs(second) && sum(first, (io) => io.requests) > 0 && sum(second, (io) => io.requests) === 0 &&
          sum(second, (io) => io.persistedBytes) > 0 && second.opened.requests === 1 + text.segments && second.entries > 0,
        first.error || second.error ? JSON.stringify(first.error ?? second.error).slice(0, 400)
          : `requests ${sum(first, (io) => io.requests)} then ${sum(second, (io) => io.requests)}; ${sum(second, (io) => io.persistedBytes)} bytes from the cache; ${second.entries} entries`);
      // (A retry replaces every kept range its reads overlap — the damage may be anywhere in
      // one — so the next page fetches what those held beyond; the one after, nothing.)
      const tampered = await pageResult(persisting, `${at}&tamper=1`);
      const after = await pageResult(persisting, at);
      const settled = await pageResult(persisting, at);
      check(`chromium ${version}: persist — every kept range damaged: fetched again (a retry), the same answers; then kept again`,
        sameAs(tampered) && tampered.tampered > 0 && sum(tampered, (io) => io.retries) > 0 && sameAs(after) && sameAs(settled) &&
          sum(settled, (io) => io.requests) === 0,
        JSON.stringify(tampered.error ?? after.error ?? settled.error ?? { tampered: tampered.tampered, retries: sum(tampered, (io) => io.retries), then: [sum(after, (io) => io.requests), sum(settled, (io) => io.requests)] }).slice(0, 400));
      // The segments published again, the same bytes with new ETags (nginx's: mtime and size).
      const later = new Date(Date.now() + 60_000);
      for (const f of readdirSync(join(dir, "text")).filter((f) => f.endsWith(".shoal"))) {
        nginx.put(`remote/text/${f}`, readFileSync(join(dir, "text", f)));
        utimesSync(join(nginx.www, "remote", "text", f), later, later);
      }
      const replaced = await pageResult(persisting, at);
      check(`chromium ${version}: persist — replaced objects: their old entries not used (fetched again) and deleted`,
        sameAs(replaced) && replaced.searches[0].io.persistedBytes === 0 && sum(replaced, (io) => io.requests) === sum(first, (io) => io.requests) &&
          second.versions === text.segments && replaced.versions === text.segments,
        JSON.stringify(replaced.error ?? { requests: sum(replaced, (io) => io.requests), first: sum(first, (io) => io.requests), versions: [second.versions, replaced.versions] }).slice(0, 400));
      // One segment (format 2), its URL with a fragment (not part of the cache key): the page
      // loaded again reads nothing from the server.
      const f = JSON.parse(readFileSync(join(dir, "l2-1.json"), "utf8"));
      const one = `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/l2-1.v2.shoal%23part&fixture=/remote/l2-1.json&bootstrap=${f.bootstrapLen}&persist=1&nostore=1&cache=0`;
      const sameOne = (r) => !r.error && r.searches.length === f.requests.length &&
        r.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(f.results[i]) && s.io.retries === 0);
      const oneFirst = await pageResult(persisting, one);
      const oneAgain = await pageResult(persisting, one);
      check(`chromium ${version}: persist — one segment, a URL with a fragment: loaded again, no request and no byte from the server`,
        sameOne(oneFirst) && sameOne(oneAgain) && sum(oneFirst, (io) => io.requests) > 0 &&
          sum(oneAgain, (io) => io.requests + io.bytes) === 0 && sum(oneAgain, (io) => io.persistedBytes) > 0,
        JSON.stringify(oneFirst.error ?? oneAgain.error ?? { first: sum(oneFirst, (io) => io.requests), again: sum(oneAgain, (io) => io.requests), bytes: sum(oneAgain, (io) => io.bytes) }).slice(0, 400));
    } finally {
      await persisting.close();
    }
    // The first response (the bootstrap region) with a byte flipped: fetched again once.
    const dot = JSON.parse(readFileSync(join(dir, "dot-4.json"), "utf8"));
    // (A new context: the pages above left these ranges in the HTTP cache.)
    const fresh = await browser.newContext();
    const flipped = await pageResult(fresh,
      `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/dot-4.v2.shoal&fixture=/remote/dot-4.json&flip=1&bootstrap=${dot.bootstrapLen}`);
    await fresh.close();
    const right = !flipped.error && flipped.searches.length === dot.requests.length &&
      flipped.searches.every((s, i) => JSON.stringify(s.rows) === JSON.stringify(dot.results[i]));
    check("chromium: openRemote, a byte flipped in transit: fetched again once, the same results",
      right && flipped.opened.retries === 1, JSON.stringify(flipped.error ?? flipped.opened).slice(0, 300));
    const missing = await pageResult(context, `${proxy.base}/shoal/test/edge/remote.html?segment=/remote/none.shoal&fixture=/remote/l2-1.json`);
    check("chromium: openRemote of a missing object is remote_status", missing.code === "remote_status", JSON.stringify(missing).slice(0, 300));
  } catch (e) {
    check("chromium: openRemote", false, String(e));
  } finally {
    await context.close();
    proxy.stop();
    nginx.stop();
  }
}

// ---- chromium -----------------------------------------------------------------------------
async function chromium() {
  const exe = process.env.SHOAL_CHROMIUM ?? "/usr/bin/chromium";
  if (!existsSync(exe)) {
    check("chromium", false, `${exe} is missing (${SETUP_HINT}: apt-get install -y --no-install-recommends chromium)`);
    return;
  }
  let pw;
  try {
    pw = createRequire(join(tools, "package.json"))("playwright-core").chromium;
  } catch (e) {
    check("chromium", false, `playwright-core not found in ${tools} (${SETUP_HINT}): ${e}`);
    return;
  }
  const { server, origin } = await staticServer(pkgDir);
  let browser;
  try {
    browser = await pw.launch({
      executablePath: exe,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"],
      timeout: 30_000,
    });
    const version = browser.version();
    for (const [query, kernels, what] of [
      ["", "simd128", "wasm fetched relative to the module"],
      ["?simd=0", "scalar", "init({ simd: false })"],
      ["?source=response", "simd128", "init(fetch(url))"],
    ]) {
      const page = await browser.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
      let result;
      try {
        await page.goto(`${origin}/test/edge/browser.html${query}`, { timeout: 30_000 });
        await page.waitForFunction(() => window.__shoalResult !== undefined, null, { timeout: 60_000 });
        result = await page.evaluate(() => window.__shoalResult);
      } catch (e) {
        result = { error: `${e}${errors.length ? `; page errors: ${errors.join("; ")}` : ""}` };
      }
      if (result && !result.error && errors.length) result = { error: `page errors: ${errors.join("; ")}` };
      compare(`chromium ${version} ${kernels} (${what})`, result, kernels);
      await page.close();
    }
    await remoteInChromium(browser, version);
    await persistence(browser, origin, version);
    await workerHelper(browser, origin, version);
    await coldStart(browser, origin, version);
    await browserExample(browser, version, "a static server");
    await browserExample(browser, version, "shoal serve");
  } catch (e) {
    check("chromium", false, String(e));
  } finally {
    await browser?.close();
    await new Promise((r) => server.close(r));
  }
}

// ---- workerd ------------------------------------------------------------------------------
const example = join(root, "examples", "cloudflare-worker");
let searchCase = null; // { DIM, requests, expected }: Node's answers over the example's segment

/** Builds the example's segment (its own script) and Node's answers to a few searches. */
async function exampleSearches() {
  if (searchCase) return searchCase;
  const seg = await run(process.execPath, [join(example, "build-segment.mjs")], { cwd: example });
  if (seg.code !== 0) throw new Error(`build-segment.mjs failed: ${seg.stderr.slice(-1000)}`);
  const { DIM, randomVectors } = await import(join(example, "build-segment.mjs"));
  const shoal = await import(join(pkgDir, "js", "index.js"));
  await shoal.init();
  const col = shoal.Collection.fromBytes(readFileSync(join(example, "segment.shoal")));
  const queries = randomVectors(8, DIM, 99);
  const requests = [];
  for (let q = 0; q < 8; q++) {
    const vector = Array.from(queries.subarray(q * DIM, (q + 1) * DIM));
    requests.push({ vector, limit: 10, ...(q % 2 ? { params: { nprobe: 3 } } : {}) });
  }
  const expected = requests.map((r) => {
    const res = col.search({ ...r, vector: Float32Array.from(r.vector) });
    return res.points.map((p) => [p.id, p.score]);
  });
  col.free();
  searchCase = { DIM, requests, expected };
  return searchCase;
}

/** Checks the example worker's routes on `port` against Node's answers. */
async function checkExampleRoutes(label, port, kernels, log) {
  const { DIM, requests, expected } = await exampleSearches();
  try {
    const info = await (await fetch(`http://127.0.0.1:${port}/`)).json();
    let same = info.kernels === kernels && info.index === "ivf-rabitq" && info.dim === DIM;
    let detail = JSON.stringify(info);
    for (let q = 0; q < requests.length && same; q++) {
      const r = await fetch(`http://127.0.0.1:${port}/search`, { method: "POST", body: JSON.stringify(requests[q]) });
      const body = await r.json();
      const got = body.points?.map((p) => [p.id, p.score]);
      // JSON numbers round-trip f64 exactly, so the f32 scores compare bit for bit.
      if (JSON.stringify(got) !== JSON.stringify(expected[q])) {
        same = false;
        detail = `query ${q}: ${JSON.stringify(body).slice(0, 300)} vs ${JSON.stringify(expected[q]).slice(0, 300)}`;
      }
    }
    const bad = await fetch(`http://127.0.0.1:${port}/search`, { method: "POST", body: JSON.stringify({ vector: [1, 2], limit: 3 }) });
    const badBody = await bad.json();
    if (same && (bad.status !== 400 || badBody.error?.code !== "dimension_mismatch")) {
      same = false;
      detail = `a wrong-dimension query gave ${bad.status} ${JSON.stringify(badBody)}`;
    }
    check(`${label} ${kernels}: ${requests.length} searches over the bundled segment = node`, same, same ? kernels : detail);
  } catch (e) {
    check(`${label} ${kernels}: example routes`, false, `${e}; log: ${log().slice(-1500)}`);
  }
}

/** Runs `workerd serve config` until `body(log)` is done; waits for every port first. */
async function withWorkerd(label, configPath, ports, body) {
  const child = spawn(bin("workerd"), ["serve", configPath], { cwd: dirname(configPath), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const log = () => out;
  try {
    try {
      for (const port of ports) await waitForHttp(`http://127.0.0.1:${port}/`, 30_000, child);
    } catch (e) {
      check(`${label}: workerd serve`, false, `${e}; log: ${out.slice(-1500)}`);
      return;
    }
    await body(log);
  } finally {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r() : child.on("close", r)));
    }
  }
}

async function workerd() {
  const workerdBin = bin("workerd");
  if (!existsSync(workerdBin)) {
    check("workerd", false, `${workerdBin} is missing (${SETUP_HINT})`);
    return;
  }
  const version = (await run(workerdBin, ["--version"])).stdout.trim();
  try {
    await exampleSearches(); // also writes the example's segment.shoal
  } catch (e) {
    check("workerd: the example's segment", false, String(e));
    return;
  }

  // Two workers: the example as written (SIMD128 module), and the same code with the scalar
  // module under the name "shoal/wasm/simd.wasm". Modules are laid out as a bundler resolves
  // them; each worker adds GET /scenario (workerd-test.js) to the example's routes.
  const rel = (p) => relative(workDir, p).split(sep).join("/");
  // Every module of the package's js/ folder (index.js imports the others).
  const jsModules = readdirSync(join(pkgDir, "js")).filter((f) => f.endsWith(".js") && f !== "worker.js").sort();
  const worker = (wasm) => `(
  modules = [
    (name = "workerd-test.js", esModule = embed "${rel(join(here, "workerd-test.js"))}"),
    (name = "worker.js", esModule = embed "${rel(join(example, "worker.js"))}"),
    (name = "scenario.mjs", esModule = embed "${rel(join(pkgDir, "test", "scenario.mjs"))}"),
    (name = "segment.shoal", data = embed "${rel(join(example, "segment.shoal"))}"),
    (name = "shoal", esModule = "export * from \\"node_modules/shoal/js/index.js\\";"),
    (name = "shoal/wasm/simd.wasm", wasm = embed "${rel(join(pkgDir, "pkg", wasm, "shoal_js_bg.wasm"))}"),
    (name = "shoal/wasm/remote-simd.wasm", wasm = embed "${rel(join(pkgDir, "pkg", `remote-${wasm}`, "shoal_js_remote_bg.wasm"))}"),
    (name = "node_modules/shoal/pkg/remote-simd/shoal_js_remote.js", esModule = embed "${rel(join(pkgDir, "pkg", "remote-simd", "shoal_js_remote.js"))}"),
${jsModules.map((f) => `    (name = "node_modules/shoal/js/${f}", esModule = embed "${rel(join(pkgDir, "js", f))}"),\n`).join("")}    (name = "node_modules/shoal/pkg/simd/shoal_js.js", esModule = embed "${rel(join(pkgDir, "pkg", "simd", "shoal_js.js"))}"),
    (name = "node_modules/shoal/pkg/scalar/shoal_js.js", esModule = embed "${rel(join(pkgDir, "pkg", "scalar", "shoal_js.js"))}"),
  ],
  compatibilityDate = "2025-09-01",
  globalOutbound = "net",
)`;
  const [portSimd, portScalar] = [await freePort(), await freePort()];
  const configPath = join(workDir, "workerd.capnp");
  writeFileSync(configPath, `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "simd", worker = .simd), (name = "scalar", worker = .scalar),
    # Fetches from the workers may reach 127.0.0.1 (the remote segments' server).
    (name = "net", network = (allow = ["public", "private", "local"]))],
  sockets = [
    (name = "simd", address = "127.0.0.1:${portSimd}", http = (), service = "simd"),
    (name = "scalar", address = "127.0.0.1:${portScalar}", http = (), service = "scalar"),
  ],
);
const simd :Workerd.Worker = ${worker("simd")};
const scalar :Workerd.Worker = ${worker("scalar")};
`);

  await withWorkerd("workerd", configPath, [portSimd, portScalar], async (log) => {
    for (const [port, kernels] of [
      [portSimd, "simd128"],
      [portScalar, "scalar"],
    ]) {
      let result;
      try {
        result = await (await fetch(`http://127.0.0.1:${port}/scenario`)).json();
      } catch (e) {
        result = { error: `${e}; log: ${log().slice(-1500)}` };
      }
      compare(`workerd ${version} ${kernels}: scenario inside the worker (init({ module }))`, result, kernels);
      await checkExampleRoutes("workerd: example worker", port, kernels, log);
      await remoteInWorkerd(port, kernels, version, log);
    }
  });
}

/** `Collection.openRemote` inside workerd, reading target/conformance/remote/ from nginx: the
 * native results, bit for bit. */
async function remoteInWorkerd(port, kernels, version, log) {
  const dir = join(root, "target", "conformance", "remote");
  if (!existsSync(join(dir, "l2-1.json"))) {
    check("workerd: openRemote", false, `${dir} is missing (cargo test -p shoal-tests --test conformance writes it)`);
    return;
  }
  const nginx = await startNginx();
  try {
    for (const name of ["l2-1", "dot-4"]) {
      const f = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
      const segment = nginx.put(`${name}.v2.shoal`, readFileSync(join(dir, `${name}.v2.shoal`)));
      let r;
      try {
        const resp = await fetch(`http://127.0.0.1:${port}/remote`, {
          method: "POST",
          body: JSON.stringify({ segment, bootstrapLen: f.bootstrapLen, requests: f.requests }),
        });
        r = await resp.json();
      } catch (e) {
        r = { error: `${e}; log: ${log().slice(-1500)}` };
      }
      const ok = !r.error && r.kernels === kernels && r.opened.requests === 1 && JSON.stringify(r.rows) === JSON.stringify(f.results);
      check(`workerd ${version} ${kernels}: openRemote ${name} from 127.0.0.1 (init({ module })) = native results, bit for bit`, ok,
        r.error ? JSON.stringify(r).slice(0, 500) : `${r.rows.length} searches, ${r.io.reduce((a, t) => a + t.requests, 0)} requests`);
    }
    // A set of three segments from its manifest: the local set's results; open = the manifest,
    // then every segment's bootstrap region at once.
    const set = JSON.parse(readFileSync(join(dir, "set.json"), "utf8"));
    for (const f of readdirSync(join(dir, "set"))) nginx.put(`set/${f}`, readFileSync(join(dir, "set", f)));
    let r;
    try {
      const resp = await fetch(`http://127.0.0.1:${port}/remote`, {
        method: "POST",
        body: JSON.stringify({ segment: `${nginx.base}/set/manifest.json`, requests: set.requests }),
      });
      r = await resp.json();
    } catch (e) {
      r = { error: `${e}; log: ${log().slice(-1500)}` };
    }
    const same = !r.error && r.kernels === kernels && r.opened.requests === 1 + set.segments && JSON.stringify(r.rows) === JSON.stringify(set.results);
    check(`workerd ${version} ${kernels}: openRemote of a 3-segment set from 127.0.0.1 = the local set's results, bit for bit; open 4 requests`, same,
      r.error ? JSON.stringify(r).slice(0, 500) : `${r.rows.length} searches, open ${r.opened.requests} requests`);
  } finally {
    nginx.stop();
  }
}

// ---- npm pack -----------------------------------------------------------------------------
async function pack() {
  const tmp = mkdtempSync(join(tmpdir(), "shoal-pack-"));
  try {
    const p = await run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: pkgDir });
    let info;
    try {
      info = JSON.parse(p.stdout)[0];
    } catch {
      check("npm pack", false, `exit ${p.code}: ${p.stderr.slice(-1000)}`);
      return;
    }
    const files = info.files.map((f) => f.path).sort();
    const required = ["package.json", "js/index.d.ts", "js/wasm.d.ts", "js/worker.d.ts", "pkg/simd/shoal_js.js", "pkg/simd/shoal_js_bg.wasm",
      "pkg/scalar/shoal_js.js", "pkg/scalar/shoal_js_bg.wasm", "pkg/remote-simd/shoal_js_remote.js", "pkg/remote-simd/shoal_js_remote_bg.wasm",
      "pkg/remote-scalar/shoal_js_remote_bg.wasm", ...readdirSync(join(pkgDir, "js")).filter((f) => f.endsWith(".js")).map((f) => `js/${f}`)];
    const missing = required.filter((f) => !files.includes(f));
    const extra = files.filter((f) => f.startsWith("test/") || f.startsWith("src/") || f.endsWith(".rs"));
    check("npm pack: tarball contents", missing.length === 0 && extra.length === 0,
      `${info.filename}, ${files.length} files, ${(info.size / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked` +
        (missing.length ? `; missing ${missing.join(", ")}` : "") + (extra.length ? `; should not ship ${extra.join(", ")}` : ""));

    const project = join(tmp, "project");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "shoal-pack-test", private: true, type: "module" }));
    const inst = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(tmp, info.filename)], { cwd: project });
    if (inst.code !== 0) {
      check("npm install <tarball> (offline, empty project)", false, inst.stderr.slice(-1500));
      return;
    }
    check("npm install <tarball> (offline, empty project)", true);
    writeFileSync(join(project, "scenario.mjs"), readFileSync(join(pkgDir, "test", "scenario.mjs")));
    writeFileSync(
      join(project, "main.mjs"),
      `import * as shoal from "shoal";
import { runScenario } from "./scenario.mjs";
const info = await shoal.init(process.argv[2] === "--scalar" ? { simd: false } : {});
// The wasm subpath exports (what a Workers bundler imports) resolve to shipped files.
for (const s of ["shoal/wasm/simd.wasm", "shoal/wasm/scalar.wasm"]) {
  const url = import.meta.resolve(s);
  if (!url.includes("/node_modules/shoal/pkg/")) throw new Error(s + " resolved to " + url);
}
console.log(JSON.stringify({ info, summary: runScenario(shoal) }));
`,
    );
    compare("installed tarball: node simd128 (import \"shoal\")", await runJson(process.execPath, ["main.mjs"], { cwd: project }), "simd128");
    compare("installed tarball: node scalar", await runJson(process.execPath, ["main.mjs", "--scalar"], { cwd: project }), "scalar");
    if (want("wrangler")) await wranglerBundle(project);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ---- wrangler: the example bundled as a user would, run by workerd ------------------------
/** Bundles examples/cloudflare-worker with `wrangler deploy --dry-run` in a project that
 * installed the tarball, then serves the bundle with workerd and compares its searches. */
async function wranglerBundle(project) {
  const wrangler = bin("wrangler");
  if (!existsSync(wrangler)) {
    check("wrangler bundle", false, `${wrangler} is missing (${SETUP_HINT})`);
    return;
  }
  try {
    await exampleSearches();
  } catch (e) {
    check("wrangler bundle: the example's segment", false, String(e));
    return;
  }
  for (const f of ["worker.js", "wrangler.toml", "segment.shoal"]) writeFileSync(join(project, f), readFileSync(join(example, f)));
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1", XDG_CONFIG_HOME: join(workDir, "wrangler-config") };
  const b = await run(wrangler, ["deploy", "--dry-run", "--outdir", "dist"], { cwd: project, env, timeoutMs: 120_000 });
  const bundle = join(project, "dist", "worker.js");
  if (b.code !== 0 || !existsSync(bundle)) {
    check("wrangler deploy --dry-run (the example, shoal from the tarball)", false, `${b.stdout.slice(-800)} ${b.stderr.slice(-800)}`);
    return;
  }
  const warnings = (b.stdout + b.stderr).match(/WARNING.*$/gm) ?? [];
  const code = readFileSync(bundle, "utf8");
  const imports = [...code.matchAll(/^import \w+ from "\.\/([^"]+)";$/gm)].map((m) => m[1]);
  check("wrangler deploy --dry-run (the example, shoal from the tarball)", warnings.length === 0 && imports.some((f) => f.endsWith(".wasm")),
    `bundle ${(code.length / 1024).toFixed(0)} KiB + ${imports.join(", ")}${warnings.length ? `; warnings: ${warnings.join(" | ")}` : ""}`);
  // Serve the bundle exactly as wrangler laid it out.
  const modules = [`(name = "worker.js", esModule = embed "dist/worker.js")`];
  for (const f of imports) modules.push(`(name = "${f}", ${f.endsWith(".wasm") ? "wasm" : "data"} = embed "dist/${f}")`);
  const port = await freePort();
  const configPath = join(project, "bundle.capnp");
  writeFileSync(configPath, `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = (modules = [${modules.join(", ")}], compatibilityDate = "2025-09-01"))],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
`);
  await withWorkerd("wrangler bundle", configPath, [port], (log) =>
    checkExampleRoutes("workerd running the wrangler bundle", port, "simd128", log));
}

// ---- main ---------------------------------------------------------------------------------
const started = Date.now();
for (const variant of ["simd", "scalar"]) {
  if (!existsSync(join(pkgDir, "pkg", variant, "shoal_js_bg.wasm"))) {
    console.error(`bindings-js/pkg/${variant} is missing: build the package first (npm run build:js)`);
    process.exit(1);
  }
}
if (await node()) {
  if (want("deno")) await deno();
  if (want("chromium")) await chromium();
  if (want("workerd")) await workerd();
  if (want("pack")) await pack();
}
console.log(`edge runtimes checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
finish();
