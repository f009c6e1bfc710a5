// Shoal for JavaScript: vector search in WebAssembly.
//
// The package wraps the wasm-bindgen glue of one of two builds of the `shoal-js` crate:
// `pkg/simd` (SIMD128 kernels) or `pkg/scalar` (for engines without SIMD128). Both return
// bit-identical results.
//
// Split by concern: errors.js (ShoalError), load.js (init: picking and loading a build),
// values.js (ids and vectors), requests.js (requests and answers), collection.js (Collection,
// Batch), persist.js (OPFS, IndexedDB). This file is the package's entry: what it exports is
// the public API (typed in index.d.ts).

export { ShoalError } from "./errors.js";
export { init, simdSupported, wasmMemoryBytes } from "./load.js";
export { Batch, Collection } from "./collection.js";
export { saveToOPFS, openFromOPFS, saveToIndexedDB, openFromIndexedDB } from "./persist.js";
