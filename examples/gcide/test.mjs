// The demo page's test (`make test-demo`): the JavaScript embedder against the Python one, then
// the page in headless Chromium against a real `shoal serve` holding the same segment — a typed
// hybrid query, a filtered text query, a vector query and "similar to" on a result, each with
// identical answers (ids and score bits) from the wasm engine in the tab and from the server.
//
//   node examples/gcide/test.mjs [--shot FILE]   (after scripts/gcide-demo-data.sh)
//
// Prints one line per check and "N passed, N failed"; exits non-zero on any failure.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { check, finish } from "../../bindings-js/test/edge/checks.mjs";
import { shoalBinary, shoalServe } from "../../bindings-js/test/edge/serve.mjs";
import { Embedder } from "./embed.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const cache = join(process.env.SHOAL_CACHE ?? join(homedir(), ".cache", "shoal"), "gcide-demo");
const segment = join(root, "target", "gcide-demo", "gcide.shoal");
const shotArg = process.argv.indexOf("--shot");
const shot = shotArg > 0 ? resolve(process.argv[shotArg + 1]) : join(root, "target", "edge", "demo-gcide.png");
const tools = resolve(process.env.SHOAL_EDGE_TOOLS ?? join(root, "target", "edge", "tools"));

// ---- the embedder: the same tokens as the Hugging Face tokenizer, the same vectors ---------
{
  const dir = join(cache, "embed");
  const table = readFileSync(join(dir, "table.bin"));
  const embedder = new Embedder(
    JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
    table.buffer.slice(table.byteOffset, table.byteOffset + table.byteLength),
  );
  const cases = JSON.parse(readFileSync(join(dir, "check.json"), "utf8"));
  let tokens = 0;
  let worst = 0;
  let firstBad = null;
  for (const c of cases) {
    const ids = embedder.tokenize(c.text);
    if (JSON.stringify(ids) !== JSON.stringify(c.ids)) {
      firstBad ??= `${JSON.stringify(c.text.slice(0, 50))}: ${ids.slice(0, 8)} vs ${c.ids.slice(0, 8)}`;
      continue;
    }
    tokens++;
    const v = embedder.embed(c.text);
    for (let d = 0; d < v.length; d++) worst = Math.max(worst, Math.abs(v[d] - c.vector[d]) / Math.max(1e-3, Math.abs(c.vector[d])));
  }
  check("embed.js tokenizes like the Hugging Face tokenizer", tokens === cases.length, firstBad ?? `${cases.length} texts`);
  check("embed.js embeds like bench/prepare_gcide.py", tokens > 0 && worst < 1e-4, `largest relative difference ${worst.toExponential(2)}`);
}

// ---- the page in Chromium, beside shoal serve -----------------------------------------------
const data = mkdtempSync(join(tmpdir(), "shoal-demo-"));
let server = null;
let browser = null;
try {
  const imported = spawnSync(shoalBinary(root), ["import", "--data", data, "--name", "gcide", segment], { encoding: "utf8" });
  if (imported.status !== 0) throw new Error(`shoal import: ${imported.stderr}`);
  server = await shoalServe(root, { data, staticDir: join(root, "target", "demo-site") });
  const chromium = createRequire(join(tools, "package.json"))("playwright-core").chromium;
  browser = await chromium.launch({
    executablePath: process.env.SHOAL_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    timeout: 30_000,
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${server.origin}/examples/gcide/`, { timeout: 30_000 });
  await page.waitForFunction(() => window.__gcide !== undefined, null, { timeout: 120_000 });
  const len = await page.evaluate(() => window.__gcide.len);
  const rows = readFileSync(join(cache, "payloads.jsonl"), "utf8").trimEnd().split("\n").length;
  check(`chromium ${browser.version()}: the page opens the segment`, len === rows && errors.length === 0, `${len} entries; ${errors.join("; ")}`);

  /** Sets the form, submits, and returns what both sides answered. */
  const ask = async (form) => {
    for (const [id, value] of Object.entries(form)) {
      if (id === "q" || id === "letters") await page.fill(`#${id}`, value);
      else await page.selectOption(`#${id}`, value);
    }
    return page.evaluate(() => window.__gcide.search());
  };
  const heads = (r) => r.wasm.map((p) => p.payload.headword);
  const agree = (r) => r.same && r.wasm.length === 10 && r.server.length === 10;

  const typed = await ask({ q: "a large animal with a trunk", mode: "hybrid", pos: "", source: "", letters: "" });
  check("a typed hybrid query: wasm and server identical", agree(typed), heads(typed).join(", "));
  check("a typed hybrid query finds the elephant", heads(typed).includes("Elephant"), heads(typed).join(", "));
  mkdirSync(dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: false });
  check("screenshot of the page after a typed query", existsSync(shot) && statSync(shot).size > 20_000, shot);

  const filtered = await ask({ q: "move quickly", mode: "text", pos: "verb", letters: "5" });
  check(
    "a filtered text query (verbs of at most 5 letters): identical, every result passes",
    agree(filtered) && filtered.wasm.every((p) => p.payload.pos === "verb" && p.payload.letters <= 5),
    heads(filtered).join(", "),
  );

  const meaning = await ask({ q: "happiness and joy", mode: "vector", pos: "", letters: "" });
  check("a vector query: identical", agree(meaning), heads(meaning).join(", "));

  const firstId = meaning.wasm[0].id;
  await page.click("#wasm li:first-child button.similar");
  const similar = await page.evaluate(() => window.__gcide.pending);
  check(
    "similar to the first result: identical, led by that entry itself",
    agree(similar) && similar.wasm[0].id === firstId && similar.wasm[0].score > 0.999,
    heads(similar).join(", "),
  );
  const verdict = await page.textContent("#verdict");
  check("the page shows the verdict", verdict.startsWith("✓ identical"), verdict);
  check("no page errors", errors.length === 0, errors.join("; "));
} catch (e) {
  check("the demo page", false, String(e?.stack ?? e));
} finally {
  await browser?.close();
  await server?.close();
  rmSync(data, { recursive: true, force: true });
}
finish();
