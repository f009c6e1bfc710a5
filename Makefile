# Shoal: the two commands of the README, plus benchmarks.
#   make demo   - builds everything, prepares the GCIDE dictionary (text, 256-d vectors, fields),
#                 serves it with shoal serve and asks it, then serves the page that searches it
#                 in WebAssembly beside the server
#   make test   - every test: Rust (native, aarch64 under QEMU, wasm under wasmtime and, through
#                 wasm-pack, in Node and headless Chromium), JS (vitest in Node), and the npm
#                 package at the edge (Deno, headless Chromium, workerd, npm pack), the demo page
#   make bench  - kernel, search and insert benchmarks (numbers go to docs/benchmarks.md)
# Each target installs what it needs (idempotent), so a fresh machine needs only these.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)
WASM_BINDGEN_VERSION := 0.2.130
WASM_PACK_VERSION := 0.15.1
TWIGGY_VERSION := 0.8.0
CACHE := $(HOME)/.cache/shoal
GLOVE := $(CACHE)/glove50
DEMO_PORT ?= 6333

.PHONY: demo test bench setup setup-rust setup-js setup-deb setup-nginx setup-minio setup-edge setup-demo build-js lint test-rust test-js test-edge test-demo \
        test-aarch64 test-wasm check-targets \
        bench-kernels bench-search bench-node bench-ann bench-filtered bench-text bench-ingest bench-codes-only bench-build bench-remote \
        bench-remote-set bench-remote-hybrid test-qdrant fuzz bench-plots bench-ram bench-sparse bench-query-threads bench-same-run bench-partitions

## ---- setup ---------------------------------------------------------------------------

setup: setup-rust setup-js

setup-rust:
	@rustup show active-toolchain >/dev/null
	@rustup target list --installed | grep -q wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@rustup target list --installed | grep -q aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
	@if [ "$$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $(WASM_BINDGEN_VERSION)" ]; then \
		echo "installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION) (a few minutes, once)"; \
		$(CARGO) install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION); \
	fi
	@if [ "$$(wasm-pack --version 2>/dev/null)" != "wasm-pack $(WASM_PACK_VERSION)" ]; then \
		echo "installing wasm-pack $(WASM_PACK_VERSION) (a few minutes, once)"; \
		$(CARGO) install wasm-pack --version $(WASM_PACK_VERSION); \
	fi
	@if [ "$$(twiggy --version 2>/dev/null)" != "twiggy-opt $(TWIGGY_VERSION)" ]; then \
		echo "installing twiggy $(TWIGGY_VERSION) (the package size report; a few minutes, once)"; \
		$(CARGO) install twiggy --version $(TWIGGY_VERSION); \
	fi

# Installs the Debian packages of $(1) that are missing.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (Debian)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

# Debian packages of the tests: QEMU user mode and the aarch64 cross linker (test-aarch64),
# Chromium and its WebDriver (test-wasm, test-edge).
DEB_TEST_PKGS := qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross chromium chromium-driver
setup-deb:
	$(call apt_install,$(DEB_TEST_PKGS))

# nginx: the static server that segments are read from by byte ranges (host-native/tests/remote.rs).
setup-nginx:
	$(call apt_install,nginx-light)

# MinIO: a real S3 API on 127.0.0.1 for the tests of segments read from a bucket
# (host-native/tests/object_store.rs), built from source with Go once (a few minutes), pinned.
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := $(CACHE)/bin/minio
export SHOAL_MINIO := $(MINIO)
setup-minio:
	@if [ ! -x $(MINIO) ] || [ "$$(cat $(MINIO).version 2>/dev/null)" != "$(MINIO_VERSION)" ]; then \
		command -v go >/dev/null || { echo "Go is needed to build MinIO (https://go.dev/dl)"; exit 1; }; \
		echo "building MinIO $(MINIO_VERSION) into $(CACHE)/bin (a few minutes, once)"; \
		GOBIN=$(CACHE)/bin go install github.com/minio/minio@$(MINIO_VERSION) && \
		echo "$(MINIO_VERSION)" > $(MINIO).version; \
	fi

# The demo's dictionary: GCIDE from Debian (dict-gcide), read by bench/prepare_gcide.py.
setup-demo:
	$(call apt_install,dict-gcide)

setup-js:
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi

build-js: setup
	npm run build:js

# The runtimes of test-edge: Chromium from Debian; playwright-core, workerd, deno and wrangler
# from npm, pinned (wrangler 4.40: newer releases need Node 22, this machine has Node 20) and
# installed into their own folder without a lockfile, because the registry here lacks the other
# platforms' binaries that a lockfile of the root package would have to list.
EDGE_TOOLS := target/edge/tools
EDGE_TOOL_PKGS := playwright-core@1.65.1 workerd@1.20261117.1 deno@2.9.6 wrangler@4.40.0
setup-edge: setup-js setup-deb
	@if [ "$$(cat $(EDGE_TOOLS)/.installed 2>/dev/null)" != "$(EDGE_TOOL_PKGS)" ]; then \
		echo "installing $(EDGE_TOOL_PKGS) into $(EDGE_TOOLS)"; \
		rm -rf $(EDGE_TOOLS) && mkdir -p $(EDGE_TOOLS) && echo '{"private":true}' > $(EDGE_TOOLS)/package.json; \
		(cd $(EDGE_TOOLS) && npm install --no-audit --no-fund --no-save --no-package-lock $(EDGE_TOOL_PKGS)); \
		echo "$(EDGE_TOOL_PKGS)" > $(EDGE_TOOLS)/.installed; \
	fi

## ---- test ----------------------------------------------------------------------------

test: setup lint test-rust test-qdrant check-targets test-aarch64 test-wasm test-edge test-demo test-js

# Rust formatting and clippy; the npm package's JavaScript type-checked (tsc --checkJs, strict)
# against its declarations (bindings-js/tsconfig.json, bindings-js/test/types.ts); the result
# tables of the README and docs/benchmarks.md equal what bench/results/ gives.
lint: build-js
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	npx tsc -p bindings-js/tsconfig.json
	python3 bench/plots.py --check

# Every kernel variant this machine's CPU has: a kernel or conformance test that could not run
# one of them fails (scripts/cpu-kernels.sh reads the CPU flags, not the kernels' detection).
HOST_KERNELS := $(shell bash scripts/cpu-kernels.sh)

# Runs every Rust test; the conformance test also writes target/conformance/* for test-js.
test-rust: setup-nginx setup-minio
	@echo "kernel variants required on this machine: $(HOST_KERNELS)"
	SHOAL_REQUIRE_KERNELS=$(HOST_KERNELS) $(CARGO) test --workspace

# Lints of the code only other targets compile: the npm package's crates (each alone, so the main
# module is linted with the features it is built with), and the test suites
# that also run for wasm32 (test-wasm) and aarch64 (test-aarch64).
check-targets: setup-rust setup-deb
	$(CARGO) clippy -p shoal-js --target wasm32-unknown-unknown -- -D warnings
	$(CARGO) clippy -p shoal-js-remote --target wasm32-unknown-unknown -- -D warnings
	$(CARGO) clippy -p shoal-kernels -p shoal-tests --tests --target wasm32-unknown-unknown -- -D warnings
	$(CARGO) clippy -p shoal-kernels -p shoal-tests --tests --target aarch64-unknown-linux-gnu -- -D warnings

# ARM on an x86 machine: the kernel equivalence and canonical-order tests, the golden files and
# the conformance scenario built for aarch64 and run under QEMU user-mode emulation — NEON must
# give the scalar reference's bits and the committed conformance digests (the same ids, score
# bits and segment bytes as on x86). The conformance scenario runs in release mode (emulated
# float code is slow; its digests do not depend on the profile) and with NEON only, the variant
# every aarch64 CPU runs: the scalar kernels are compared with NEON bit for bit by the
# equivalence suite, and the scalar scenario is the one x86 and wasm already run.
AARCH64 := aarch64-unknown-linux-gnu
AARCH64_ENV := CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" SHOAL_REQUIRE_KERNELS=neon
test-aarch64: setup-rust setup-deb
	$(AARCH64_ENV) $(CARGO) test --target $(AARCH64) -p shoal-kernels --test equivalence --test canonical_order
	$(AARCH64_ENV) $(CARGO) test --target $(AARCH64) -p shoal-tests --test golden
	$(AARCH64_ENV) SHOAL_ONLY_KERNELS=neon $(CARGO) test --release --target $(AARCH64) -p shoal-tests --test conformance

# The core crates' Rust tests inside JavaScript engines (wasm-bindgen-test): kernel
# equivalence, the canonical order, the golden files and the conformance scenario, for the
# SIMD128 and scalar builds, in Node and headless Chromium (scripts/wasm-tests.sh).
test-wasm: setup-rust setup-deb
	bash scripts/wasm-tests.sh

# The official qdrant-client (PyPI) against `shoal serve`, unmodified (sparse vectors too); then
# LangChain's (dense, hybrid, sparse) and LlamaIndex's QdrantVectorStore with the demo's real
# embeddings (wordllama, GCIDE).
QDRANT_CLIENT := qdrant-client==1.20.0
LANGCHAIN_QDRANT := langchain-qdrant==1.1.0
LLAMAINDEX_QDRANT := llama-index-vector-stores-qdrant==0.10.4
test-qdrant: setup-demo
	@python3 -c "import qdrant_client" 2>/dev/null || pip install --quiet $(QDRANT_CLIENT)
	@python3 -c "import langchain_qdrant" 2>/dev/null || pip install --quiet $(LANGCHAIN_QDRANT)
	@python3 -c "import llama_index.vector_stores.qdrant" 2>/dev/null || pip install --quiet $(LLAMAINDEX_QDRANT)
	@python3 -c "import wordllama" 2>/dev/null || pip install --quiet $$(grep '^wordllama==' bench/requirements-bench.txt)
	$(CARGO) build -p shoal-host
	python3 host-native/tests/qdrant_compat.py target/debug/shoal
	python3 host-native/tests/sparse_compat.py target/debug/shoal
	python3 host-native/tests/named_compat.py target/debug/shoal
	python3 host-native/tests/langchain_compat.py target/debug/shoal
	python3 host-native/tests/llamaindex_compat.py target/debug/shoal

test-js: build-js setup-nginx
	@test -f target/conformance/l2-50.json -a -f target/conformance/remote/l2-1.json || $(CARGO) test -p shoal-tests --test conformance
	npx vitest run --reporter=default --reporter=json --outputFile=target/vitest.json
	@node scripts/vitest-summary.mjs target/vitest.json

# The npm package at the edge: wasm size budget, then the shared scenario
# (bindings-js/test/scenario.mjs) in Node, Deno, headless Chromium and workerd, and from an
# `npm pack` tarball installed into an empty project — every result identical to Node's.
test-edge: build-js setup-edge
	bash bindings-js/scripts/sizes.sh
	node bindings-js/test/edge/run.mjs

# The demo page (examples/gcide) in headless Chromium beside `shoal serve` holding the same
# segment: typed, filtered, vector and "similar to" queries answered identically by both; then
# LangChain.js's QdrantVectorStore and the official Qdrant JS client against `shoal serve` with
# the demo's embeddings.
test-demo: build-js setup-edge setup-demo
	$(CARGO) build -p shoal-host
	scripts/gcide-demo-data.sh target/debug/shoal
	node examples/gcide/test.mjs
	node host-native/tests/langchain_compat.mjs
	node host-native/tests/qdrant_js_compat.mjs

## ---- demo ----------------------------------------------------------------------------

# The GCIDE dictionary (about 25,000 entries of the 15,000 most used headwords, 256-d wordllama
# vectors, text and keyword/integer fields) built with `shoal build`, imported into `shoal serve`,
# asked from the terminal, and served with the page that searches it in WebAssembly beside the
# server (examples/gcide; Ctrl-C stops). Derived data is cached under ~/.cache/shoal/gcide-demo.
demo: setup build-js setup-demo
	$(CARGO) build --release -p shoal-host
	@echo "== the GCIDE dictionary: entries, vectors (wordllama, offline), segment (shoal build)"
	scripts/gcide-demo-data.sh target/release/shoal
	target/release/shoal inspect target/gcide-demo/gcide.shoal
	@echo "== shoal serve: the segment imported, asked over HTTP"
	scripts/demo-serve.sh target/gcide-demo/gcide.shoal $(CACHE)/demo-data $(DEMO_PORT)

# words.txt is written last: its presence marks a complete preparation.
$(GLOVE)/words.txt:
	python3 bench/prepare_glove.py

## ---- bench ---------------------------------------------------------------------------

bench: setup build-js $(GLOVE)/words.txt bench-kernels bench-search bench-node bench-ann bench-filtered bench-text bench-ingest \
       bench-codes-only bench-build bench-remote bench-remote-hybrid

# The plots (docs/img/) and result tables (docs/benchmarks.md, README) from the result files
# committed in bench/results/ (after a benchmark run, `python3 bench/plots.py --collect` copies
# the new ones there from ~/.cache/shoal/results/ first).
bench-plots:
	@python3 -c "import matplotlib" 2>/dev/null || pip install --quiet $$(grep '^matplotlib==' bench/requirements-bench.txt)
	python3 bench/plots.py

bench-kernels:
	$(CARGO) bench -p shoal-kernels --bench kernels
	$(CARGO) bench -p shoal-kernels --bench same_as_wasm

bench-search:
	$(CARGO) bench -p shoal-host --bench exact_search

bench-node:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only glove-100k
	SHOAL_JS_FEATURES=bench SHOAL_JS_PKG=pkg-bench bash bindings-js/scripts/build.sh
	node bench/node/kernels.mjs
	node bench/node/insert.mjs
	node bench/node/coldstart.mjs
	node bench/node/memory.mjs

# Issue 7: 1M x 128-d inside 128 MB of wasm memory: codes only (4 and 5 bits), and 4 bits with
# lazy exact re-ranking (vectors read from a file on demand). Segments built natively once.
CODES := $(CACHE)/codes-only
SYNTH := $(CACHE)/datasets/synthetic-1m-128
bench-codes-only: build-js
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only synthetic-1m-128
	$(CARGO) build --release -p shoal-host
	mkdir -p $(CODES)
	for b in 4 5; do test -f $(CODES)/b$$b.shoal || target/release/shoal build $(SYNTH)/base.npy \
	  --index ivf-rabitq --bits $$b --codes-only --out $(CODES)/b$$b.shoal; done
	test -f $(CODES)/lazy-b4.shoal || target/release/shoal build $(SYNTH)/base.npy --index ivf-rabitq \
	  --bits 4 --codes-only --vectors-out $(CODES)/lazy-b4.vectors --out $(CODES)/lazy-b4.shoal
	node bench/node/codes-only.mjs synthetic-1m-128 $(CODES)/b4.shoal $(CODES)/b5.shoal \
	  $(CODES)/lazy-b4.shoal:$(CODES)/lazy-b4.vectors

# Segments read by byte ranges from nginx with 20 ms added per request (docs/benchmarks.md,
# "Segments read by byte ranges"): format 1 against format 2, cold and warm.
bench-remote: setup-nginx build-js setup-edge
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only glove-400k,synthetic-1m-128
	$(CARGO) bench -p shoal-host --bench remote
	node bench/node/remote.mjs

# The GCIDE dictionary (vectors, text, fields) read by ranges: natively (vector, text, hybrid,
# with and without payloads), from Node and Chromium, and its text queries against Pagefind
# (docs/benchmarks.md, "A hybrid collection read by byte ranges", "Text by byte ranges against
# Pagefind").
bench-remote-hybrid: setup-nginx build-js setup-edge
	pip install -q -r bench/requirements-bench.txt
	npm ci --prefix bench/node --no-audit --no-fund
	python3 bench/prepare_gcide.py
	$(CARGO) bench -p shoal-host --bench remote_hybrid
	node bench/node/remote.mjs --datasets gcide-vector,gcide-text,gcide-hybrid,gcide-filter,gcide-rare
	node bench/node/pagefind.mjs

# The 10M x 128-d segment set of bench/large.py, published with `shoal publish` and read by ranges
# from Node through nginx with 20 ms per request (docs/benchmarks.md, "A 10M set read by byte
# ranges"). Not part of `make bench`: the ingest takes 20-40 minutes and 12 GB of disk (as root,
# for its memory cgroup); it is run once, and kept in ~/.cache/shoal/large/.
SET_10M ?= $(HOME)/.cache/shoal/remote/set-10m
bench-remote-set: setup-nginx build-js
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only synthetic-10m-128
	test -f $(HOME)/.cache/shoal/large/data/collections/large/manifest.json || python3 bench/large.py ingest
	test -f $(SET_10M)/manifest.json || $(CARGO) run --release -p shoal-host -- publish \
	  $(HOME)/.cache/shoal/large/data/collections/large $(SET_10M)
	node bench/node/remote_set.mjs --set $(SET_10M)

# ANN: datasets with exact ground truth, Shoal native and wasm, then the peers (PyPI packages).
ANN_DATASETS ?= glove-100k,gcide-256
bench-ann:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only $(ANN_DATASETS)
	SHOAL_ANN_DATASETS=$(ANN_DATASETS) $(CARGO) bench -p shoal-host --bench ann
	for d in $$(echo $(ANN_DATASETS) | tr , ' '); do node bench/node/ann.mjs $$d; done
	for d in $$(echo $(ANN_DATASETS) | tr , ' '); do python3 bench/peers.py $$d; done

# Queries in parallel natively: the ANN sweep on glove-100k and gcide-256 with queries answered by
# 1 and by 2 threads at once (each one query at a time), QPS of both per sweep point.
# Shoal (1- and 4-bit) against hnswlib, one after another on CPU 0 (docs/benchmarks.md, "Shoal
# against hnswlib in one run"); SAME_RUN_DATASETS narrows it.
SAME_RUN_DATASETS ?= glove-100k,gcide-256,glove-400k,synthetic-1m-128
bench-same-run:
	bash bench/same_run.sh $(SAME_RUN_DATASETS) 0

# Partition counts at equal recall (2√n, twice, four times), glove-400k and gcide-256, on CPU 0
# (docs/benchmarks.md, "How many partitions, and would spilled assignments help?").
bench-partitions:
	pip install -q -r bench/requirements-bench.txt
	bash bench/partitions.sh 0

bench-query-threads:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only $(ANN_DATASETS)
	SHOAL_ANN_DATASETS=$(ANN_DATASETS) SHOAL_ANN_QUERY_THREADS=1,2 $(CARGO) bench -p shoal-host --bench ann

# Index builds on every core: `shoal build` of 1M x 128-d on 1 and 2 threads, medians, same bytes.
bench-build:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only synthetic-1m-128
	$(CARGO) build --release -p shoal-host
	bash bench/build_threads.sh

# Issue 4: filtered search on GloVe 400k, Shoal then hnswlib + Lance, one table.
bench-filtered:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/datasets.py --only glove-400k
	python3 bench/filtered.py prepare
	$(CARGO) bench -p shoal-host --bench filtered
	python3 bench/filtered.py peers
	python3 bench/filtered.py report

# shoal serve under a memory limit (cgroups; needs root): 1M x 100-d, 1- and 4-bit codes, QPS and
# recall at each limit and the smallest limit that serves every query (docs/img/ram-qps.png).
bench-ram:
	pip install -q -r bench/requirements-bench.txt
	$(CARGO) build --release -p shoal-host
	python3 bench/datasets.py --only mixed-1m-100
	for b in 1 4; do python3 bench/ram.py prepare --bits $$b && python3 bench/ram.py run --bits $$b --limits 1024,512,256,128,64 --min-search; done

# Ingest into `shoal serve`: binary batches vs Qdrant-style JSON, 1M x 128-d, fsync per batch.
bench-ingest:
	pip install -q -r bench/requirements-bench.txt
	$(CARGO) build --release -p shoal-host
	python3 bench/ingest.py --clients 1
	python3 bench/ingest.py --clients 2 --runs 1

# Full text on GCIDE: Shoal native and in Node, tantivy, MiniSearch, FlexSearch, Orama.
bench-text: build-js
	pip install -q -r bench/requirements-bench.txt
	npm ci --prefix bench/node --no-audit --no-fund
	python3 bench/text.py prepare
	python3 bench/text.py tantivy
	$(CARGO) bench -p shoal-host --bench text
	node --max-old-space-size=8000 bench/node/text.mjs
	python3 bench/text.py report

# Sparse-vector search on GCIDE, pruned against every posting (not in `make bench`'s list: it
# shares bench-text's prepared data).
bench-sparse:
	pip install -q -r bench/requirements-bench.txt
	python3 bench/text.py prepare
	$(CARGO) bench -p shoal-host --bench sparse

## ---- fuzz (nightly; not part of `make test`) -----------------------------------------

FUZZ_SECONDS ?= 600
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz
	cd fuzz && cargo +nightly fuzz run segment_open -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run search_request -- -max_total_time=$(FUZZ_SECONDS)
