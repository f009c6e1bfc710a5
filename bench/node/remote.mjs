// Segments read by byte ranges from JavaScript (`Collection.openRemote`), in Node and in headless
// Chromium: what a query costs when the segment lies on a static server — requests, dependent
// round trips (waves), bytes and time per query, cold and warm, with recall@10.
//
//   node bench/node/remote.mjs [--datasets synthetic-1m-128,glove-400k] [--latency 20] [--queries 200]
//
// The inputs are what `cargo bench -p shoal-host --bench remote` keeps in ~/.cache/shoal/remote/
// (run it first; `make bench-remote` runs both): per dataset the format-2 file (an IVF-RaBitQ
// index, 1 bit, default settings) and its queries with their exact neighbours. Served by nginx
// through scripts/range-proxy.mjs adding `--latency` ms to every request (the page and the
// package from the same origin):
// - cold: opened with `cacheBytes: 0` and its bootstrap hint — each query starts with only the
//   bootstrap region in memory (in Chromium, requests also bypass the HTTP cache);
// - warm: `cacheBytes` 1 GiB, the second pass over the queries timed;
// each also with `multipartRanges: true` (a wave's ranges in one request; nginx answers them).
// Writes ~/.cache/shoal/results/remote-js-<dataset>.json.
import { existsSync, readFileSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Collection } from "../../bindings-js/js/index.js";
import { startNginx, startProxy } from "../../bindings-js/test/servers.mjs";
import { summary } from "./remote_summary.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const datasets = arg("datasets", "synthetic-1m-128,glove-400k").split(",");
const latency = Number(arg("latency", "20"));
const maxQueries = Number(arg("queries", "200"));
const cacheDir = join(process.env.SHOAL_CACHE ?? join(homedir(), ".cache", "shoal"));
const WARM_CACHE = 1 << 30;

const line = (where, open, c, w) =>
  `${where}: open ${open.requests} requests, ${(open.bytes / 1e3).toFixed(0)} KB, ${open.ms.toFixed(0)} ms | cold ${c.waves_mean.toFixed(2)} waves (max ${c.waves_max}), ` +
  `${c.requests_mean.toFixed(1)} requests (max ${c.requests_max}), ${c.kb_mean.toFixed(0)} KB (max ${c.kb_max.toFixed(0)}), p50 ${c.ms_p50.toFixed(0)} ms, p90 ${c.ms_p90.toFixed(0)} ms | ` +
  `warm ${w.requests_mean.toFixed(1)} requests, p50 ${w.ms_p50.toFixed(1)} ms | recall@10 ${c.recall_at_10.toFixed(4)}`;

/** Node: the same reads through the package in this process. */
async function inNode(url, fixture, multipart) {
  const requests = fixture.requests.map((r) => (r.vector ? { ...r, vector: Float32Array.from(r.vector) } : { ...r }));
  const bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];
  const pass = async (col) => {
    const out = [];
    for (const req of requests) {
      const t = performance.now();
      const res = await col.search(req);
      out.push({ ms: performance.now() - t, io: res.io, rows: res.points.map((p) => [String(p.id), bits(p.score)]) });
    }
    return out;
  };
  const t = performance.now();
  const cold = await Collection.openRemote(url, { cacheBytes: 0, bootstrapBytes: fixture.bootstrapLen, multipartRanges: multipart });
  const open = { ...cold.opened, ms: performance.now() - t };
  const coldPass = await pass(cold);
  const warm = await Collection.openRemote(url, { cacheBytes: WARM_CACHE, bootstrapBytes: fixture.bootstrapLen, multipartRanges: multipart });
  await pass(warm);
  const warmPass = await pass(warm);
  cold.free();
  warm.free();
  return { open, cold: coldPass, warm: warmPass };
}

/** Chromium: the page test/edge/remote.html, a cold page and a warm one. */
async function inChromium(base, name, fixture, multipart) {
  const tools = join(root, "target", "edge", "tools");
  let pw;
  try {
    pw = createRequire(join(tools, "package.json"))("playwright-core").chromium;
  } catch {
    return { skipped: `playwright-core not in ${tools} (make setup-edge)` };
  }
  const browser = await pw.launch({ executablePath: process.env.SHOAL_CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = async (extra) => {
      const p = await browser.newPage();
      await p.goto(`${base}/shoal/test/edge/remote.html?segment=/remote/${name}.v2.shoal&fixture=/remote/${name}.json&bootstrap=${fixture.bootstrapLen}&nostore=1${multipart ? "&multipart=1" : ""}${extra}`);
      await p.waitForFunction(() => window.__shoalResult !== undefined, null, { timeout: 600_000 });
      const r = await p.evaluate(() => window.__shoalResult);
      await p.close();
      if (r.error) throw new Error(r.error);
      return r;
    };
    const cold = await page("&cache=0");
    const warm = await page(`&cache=${WARM_CACHE}&repeat=2`);
    // `persist` (one range per request): a page fills the Cache API, one loaded after it in
    // the same profile searches with nothing in memory.
    let reloaded = null;
    if (!multipart) {
      const context = await browser.newContext();
      const at = `${base}/shoal/test/edge/remote.html?segment=/remote/${name}.v2.shoal&fixture=/remote/${name}.json&bootstrap=${fixture.bootstrapLen}&nostore=1&cache=0&persist=1`;
      const load = async () => {
        const p = await context.newPage();
        await p.goto(at);
        await p.waitForFunction(() => window.__shoalResult !== undefined, null, { timeout: 600_000 });
        const r = await p.evaluate(() => window.__shoalResult);
        await p.close();
        if (r.error) throw new Error(r.error);
        return r;
      };
      await load();
      reloaded = (await load()).searches;
      await context.close();
    }
    return {
      version: browser.version(),
      open: { ...cold.opened, ms: cold.openMs },
      cold: cold.searches,
      warm: warm.searches.filter((s) => s.warm),
      reloaded,
    };
  } finally {
    await browser.close();
  }
}

const nginx = await startNginx();
const proxy = await startProxy(nginx.base, latency);
try {
  symlinkSync(join(root, "bindings-js"), join(nginx.www, "shoal"));
  mkdirSync(join(nginx.www, "remote"));
  for (const name of datasets) {
    const file = join(cacheDir, "remote", `${name}.v2.shoal`);
    const fixturePath = join(cacheDir, "remote", `${name}.json`);
    if (!existsSync(file) || !existsSync(fixturePath)) {
      console.log(`== ${name}: skipped: ${file} is missing (run \`cargo bench -p shoal-host --bench remote\` first)`);
      continue;
    }
    const fixture = JSON.parse(readFileSync(fixturePath, "utf8"));
    fixture.requests = fixture.requests.slice(0, maxQueries);
    fixture.truth = fixture.truth.slice(0, maxQueries);
    symlinkSync(file, join(nginx.www, "remote", `${name}.v2.shoal`));
    writeFileSync(join(nginx.www, "remote", `${name}.json`), JSON.stringify({ requests: fixture.requests }));
    console.log(`== ${name}: ${fixture.n} x ${fixture.dim}-d (${fixture.metric}), ${fixture.requests.length} queries, +${latency} ms per request`);
    const out = { dataset: name, n: fixture.n, dim: fixture.dim, metric: fixture.metric, queries: fixture.requests.length, latency_ms: latency, index: "ivf-rabitq, 1 bit, default settings" };
    for (const multipart of [false, true]) {
      const how = multipart ? "-multipart" : "";
      const node = await inNode(`${proxy.base}/remote/${name}.v2.shoal`, fixture, multipart);
      const n = (out[`node${how}`] = { version: process.version, open: node.open, cold: summary(node.cold, fixture.truth), warm: summary(node.warm, fixture.truth) });
      console.log(line(`node ${process.version}${multipart ? ", multipart ranges" : ""}`, n.open, n.cold, n.warm));
      const chromium = await inChromium(proxy.base, name, fixture, multipart);
      if (chromium.skipped) {
        console.log(`chromium: skipped: ${chromium.skipped}`);
      } else {
        const c = (out[`chromium${how}`] = { version: chromium.version, open: chromium.open, cold: summary(chromium.cold, fixture.truth), warm: summary(chromium.warm, fixture.truth) });
        console.log(line(`chromium ${chromium.version}${multipart ? ", multipart ranges" : ""}`, c.open, c.cold, c.warm));
        if (chromium.reloaded) {
          const r = (c.reloaded = summary(chromium.reloaded, fixture.truth));
          const kept = chromium.reloaded.reduce((a, s) => a + s.io.persistedBytes, 0) / chromium.reloaded.length / 1e3;
          r.persisted_kb_mean = kept;
          console.log(`chromium, a page loaded again (persist): ${r.requests_mean.toFixed(1)} requests, ${r.kb_mean.toFixed(1)} KB (+ ${kept.toFixed(1)} KB from the Cache API), p50 ${r.ms_p50.toFixed(1)} ms`);
        }
      }
    }
    const results = join(cacheDir, "results");
    mkdirSync(results, { recursive: true });
    writeFileSync(join(results, `remote-js-${name}.json`), `${JSON.stringify(out, null, 1)}\n`);
  }
} finally {
  proxy.stop();
  nginx.stop();
}
