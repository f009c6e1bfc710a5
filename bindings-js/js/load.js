// Loading the WebAssembly module: one of two builds of the `shoal-js` crate, `pkg/simd`
// (SIMD128 kernels) or `pkg/scalar` (engines without SIMD128), bit-identical in results.

// The wasm-bindgen glue. Both builds export the same functions, so their glue is the same file
// (`scripts/build.sh` checks it): imported statically, it loads with this module rather than
// after `init()` is called.
import * as glueModule from "../pkg/simd/shoal_js.js";
import { ShoalError } from "./errors.js";

// A minimal module using SIMD128 (i8x16.splat, i8x16.popcnt): validates only where the
// engine supports it.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253,
  15, 253, 98, 11,
]);

/** Whether this engine supports WebAssembly SIMD128. */
export function simdSupported() {
  try {
    return typeof WebAssembly === "object" && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

/** @type {any} the wasm-bindgen glue module of the loaded build */
let glue = null;
/** @type {any} the wasm exports (for `memory`) */
let wasmExports = null;
/** @type {{ simd: boolean, kernels: string } | null} */
let loaded = null;
/** @type {Promise<{ simd: boolean, kernels: string }> | null} */
let loading = null;

const proc = /** @type {any} */ (globalThis).process;
const isNode = typeof proc === "object" && proc !== null && typeof proc.versions?.node === "string";

/**
 * The default location of a build's wasm file, next to its glue (computed only when needed:
 * some runtimes have no `import.meta.url`).
 * @param {boolean} simd
 */
function wasmUrl(simd) {
  return simd ? new URL("../pkg/simd/shoal_js_bg.wasm", import.meta.url) : new URL("../pkg/scalar/shoal_js_bg.wasm", import.meta.url);
}

/**
 * Loads the WebAssembly module. Picks the SIMD128 build when the engine supports it and the
 * scalar build otherwise; `{ simd: false }` forces the scalar build. Only the first call loads;
 * later calls return the same result whatever their options.
 *
 * Where the module comes from:
 * - by default, the `.wasm` file next to the glue: read from disk where `import.meta.url` is a
 *   `file:` URL (Node, Deno), fetched relative to this module otherwise (browsers, bundlers —
 *   `new URL("../pkg/…", import.meta.url)` is the pattern Vite and webpack rewrite);
 * - `{ module }` (or `{ wasm }`, the same): a compiled `WebAssembly.Module` (Cloudflare Workers
 *   and workerd, which forbid compiling bytes at run time: `import wasm from
 *   "shoal/wasm/simd.wasm"`), bytes (`ArrayBuffer`, typed array), a `URL` or URL string, a
 *   `Response` or a promise of one;
 * - `init(source)`: the same sources, given directly instead of in an options object.
 *
 * The result says which build actually runs (`kernels` is read from the loaded module).
 *
 * @param {{ simd?: boolean, module?: any, wasm?: any } | any} [opts]
 * @returns {Promise<{ simd: boolean, kernels: string }>}
 */
export function init(opts = {}) {
  if (loaded) return Promise.resolve(loaded);
  if (!loading) {
    let options;
    try {
      options = initOptions(opts);
    } catch (e) {
      return Promise.reject(e);
    }
    loading = load(options).then(
      (info) => {
        loaded = info;
        return info;
      },
      (e) => {
        loading = null;
        throw e;
      },
    );
  }
  return loading;
}

/** `init`'s argument as options: a plain object is options, anything else is a wasm source.
 * @param {any} opts
 * @param {string} what the function named in an error
 * @returns {{ simd?: boolean, wasm?: any }} */
export function initOptions(opts, what = "init") {
  if (opts === undefined || opts === null) return {};
  const proto = typeof opts === "object" ? Object.getPrototypeOf(opts) : undefined;
  if (proto === Object.prototype || proto === null) {
    if (opts.module !== undefined && opts.wasm !== undefined && opts.module !== opts.wasm) {
      throw new ShoalError("invalid_argument", `${what}: give the wasm module as \`module\` or \`wasm\`, not both`);
    }
    return { simd: opts.simd, wasm: opts.module ?? opts.wasm };
  }
  return { wasm: opts };
}

/** @param {{ simd?: boolean, wasm?: any }} opts */
async function load(opts) {
  const g = glueModule;
  const ex = await instantiate(g, wasmUrl, opts);
  glue = g;
  wasmExports = ex;
  // The two builds share one glue: report what the loaded module is, not what was guessed
  // (a given module may be either build).
  const kernels = g.kernels_name();
  return Object.freeze({ simd: kernels === "simd128", kernels });
}

/**
 * Compiles and instantiates one build of a module through its wasm-bindgen glue `g`: the
 * SIMD128 build where the engine supports it (and `opts.simd` is not `false`), from
 * `opts.wasm` or else from `url(simd)`. Returns the module's exports.
 * @param {any} g
 * @param {(simd: boolean) => URL} url
 * @param {{ simd?: boolean, wasm?: any }} opts
 */
export async function instantiate(g, url, opts) {
  const simd = opts.simd === false ? false : simdSupported();
  if (opts.simd === true && !simd) {
    throw new ShoalError("unsupported", "this engine does not support WebAssembly SIMD128");
  }
  let source = opts.wasm;
  /** @type {Promise<WebAssembly.Module> | null} */
  let compiling = null;
  if (source === undefined) {
    const file = url(simd);
    if (isNode || file.protocol === "file:") {
      // Node and Deno: read the file (fetch does not take file: URLs in Node). A computed
      // specifier: bundlers for browsers and Workers (esbuild, wrangler) leave it alone.
      const fsModule = "node:fs/promises";
      compiling = import(/* @vite-ignore */ /* webpackIgnore: true */ fsModule)
        .then(({ readFile }) => readFile(file))
        .then((bytes) => WebAssembly.compile(bytes));
    } else {
      // Browsers: fetch it (instantiateStreaming when served as application/wasm).
      source = file;
    }
  } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    compiling = WebAssembly.compile(/** @type {any} */ (source));
  } else if (source instanceof WebAssembly.Module) {
    compiling = Promise.resolve(source);
  }
  // An unawaited rejection would be reported before it is awaited below.
  compiling?.catch(() => {});
  if (!compiling) return g.default({ module_or_path: source });
  // A compiled module is instantiated directly. The glue's async path tests `typeof
  // Response`, which in Node loads the whole fetch implementation (~15 ms of a ~20 ms
  // start); instantiating a compiled module is ~1 ms.
  const module = await compiling;
  try {
    return g.initSync({ module });
  } catch (e) {
    // Older Chromium refuses a synchronous instantiation of a large module on the main
    // thread (RangeError): instantiate asynchronously there.
    if (!(e instanceof RangeError)) throw e;
    return g.default({ module_or_path: module });
  }
}

export function wasmGlue() {
  if (!glue) throw new ShoalError("not_initialized", "call `await init()` before using Shoal");
  return glue;
}

/** The wasm linear memory's current buffer (views into it detach when it grows). */
export function memoryBuffer() {
  return wasmExports.memory.buffer;
}

/**
 * Bytes of wasm linear memory reserved by the engine (it grows and never shrinks; all
 * collections of this instance share it). 0 before `init()`.
 */
export function wasmMemoryBytes() {
  return wasmExports ? wasmExports.memory.buffer.byteLength : 0;
}
