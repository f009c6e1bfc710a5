// Runs the shared scenario (../scenario.mjs) in Node or Deno and prints one JSON line:
// { info, summary }. `--scalar` forces the scalar build.
//
//   node bindings-js/test/edge/cli.mjs [--scalar]
//   deno run --allow-read bindings-js/test/edge/cli.mjs [--scalar]
import * as shoal from "../../js/index.js";
import { runScenario } from "../scenario.mjs";

const args = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const info = await shoal.init(args.includes("--scalar") ? { simd: false } : {});
const runtime = globalThis.Deno ? `deno ${globalThis.Deno.version.deno}` : `node ${process.versions.node}`;
console.log(JSON.stringify({ runtime, info, summary: runScenario(shoal) }));
