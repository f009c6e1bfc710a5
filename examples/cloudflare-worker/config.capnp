# workerd configuration of the example worker, using the package built in this repository
# (bindings-js/). From this directory:
#   node build-segment.mjs                   # writes segment.shoal
#   npx workerd serve config.capnp           # HTTP on 127.0.0.1:8787
#   curl -s 127.0.0.1:8787/ ; curl -s -X POST 127.0.0.1:8787/search -d '{"vector":[...32 floats],"limit":5}'
# With wrangler, `wrangler dev` reads wrangler.toml instead and resolves "shoal" from node_modules.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "shoal-example", worker = .worker)],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "shoal-example")],
);

const worker :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "segment.shoal", data = embed "segment.shoal"),
    # The npm package `shoal`, laid out as a bundler would resolve it.
    (name = "shoal", esModule = "export * from \"node_modules/shoal/js/index.js\";"),
    (name = "shoal/wasm/simd.wasm", wasm = embed "../../bindings-js/pkg/simd/shoal_js_bg.wasm"),
    (name = "node_modules/shoal/js/index.js", esModule = embed "../../bindings-js/js/index.js"),
    (name = "node_modules/shoal/js/errors.js", esModule = embed "../../bindings-js/js/errors.js"),
    (name = "node_modules/shoal/js/load.js", esModule = embed "../../bindings-js/js/load.js"),
    (name = "node_modules/shoal/js/values.js", esModule = embed "../../bindings-js/js/values.js"),
    (name = "node_modules/shoal/js/requests.js", esModule = embed "../../bindings-js/js/requests.js"),
    (name = "node_modules/shoal/js/collection.js", esModule = embed "../../bindings-js/js/collection.js"),
    (name = "node_modules/shoal/js/persist.js", esModule = embed "../../bindings-js/js/persist.js"),
    (name = "node_modules/shoal/pkg/simd/shoal_js.js", esModule = embed "../../bindings-js/pkg/simd/shoal_js.js"),
    (name = "node_modules/shoal/pkg/scalar/shoal_js.js", esModule = embed "../../bindings-js/pkg/scalar/shoal_js.js"),
  ],
  compatibilityDate = "2025-09-01",
);
