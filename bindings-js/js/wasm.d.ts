// Types of `shoal/wasm/simd.wasm` and `shoal/wasm/scalar.wasm`: the module as Workers bundlers
// (wrangler) and workerd provide it, ready for `init({ module })`.
declare const module: WebAssembly.Module;
export default module;
