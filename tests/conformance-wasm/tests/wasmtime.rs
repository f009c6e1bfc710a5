//! The conformance scenario as a plain wasm module (SIMD128 and scalar builds) under wasmtime:
//! both must give the outputs whose digests are committed in `tests/golden/conformance.json`
//! (which the native run of `tests/tests/conformance.rs` is held to as well), and searches in
//! wasm must not allocate after warm-up.

use std::path::{Path, PathBuf};
use std::process::Command;

use shoal_core::PointId;
use shoal_testkit::scenario::{CONFIGS, Output, check_digest};

/// Builds the conformance wasm module with or without SIMD128 and returns its path.
fn build_wasm(simd: bool) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dir = root.join(if simd { "target/conformance-wasm-simd" } else { "target/conformance-wasm-scalar" });
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "-p", "shoal-conformance-wasm", "--target", "wasm32-unknown-unknown"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", if simd { "-C target-feature=+simd128" } else { "" })
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS")
        .status()
        .expect("run cargo to build the conformance wasm module");
    assert!(
        status.success(),
        "building the conformance wasm module failed (is the wasm32-unknown-unknown target installed?)"
    );
    target_dir.join("wasm32-unknown-unknown/release/shoal_conformance_wasm.wasm")
}

struct Reader<'a>(&'a [u8]);
impl Reader<'_> {
    fn u32(&mut self) -> u32 {
        let (h, t) = self.0.split_at(4);
        self.0 = t;
        u32::from_le_bytes(h.try_into().unwrap())
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        h.to_vec()
    }
}

fn decode(buf: &[u8]) -> (String, Output) {
    let mut r = Reader(buf);
    let n = r.u32() as usize;
    let name = String::from_utf8(r.bytes(n)).unwrap();
    let n = r.u32() as usize;
    let ids = (0..n)
        .map(|_| match r.bytes(1)[0] {
            0 => PointId::Num(u64::from_le_bytes(r.bytes(8).try_into().unwrap())),
            _ => PointId::Uuid(r.bytes(16).try_into().unwrap()),
        })
        .collect();
    let n = r.u32() as usize;
    let score_bits = r.bytes(n * 4).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let n = r.u32() as usize;
    let counts = r.bytes(n * 4).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let n = r.u32() as usize;
    let segment = r.bytes(n);
    let n = r.u32() as usize;
    let manifests = (0..n)
        .map(|_| {
            let len = r.u32() as usize;
            String::from_utf8(r.bytes(len)).unwrap()
        })
        .collect();
    assert!(r.0.is_empty());
    (name, Output { ids, score_bits, counts, segment, manifests })
}

#[test]
fn encoding_round_trips() {
    let out = Output {
        ids: vec![PointId::Num(1), PointId::Uuid([7; 16]), PointId::Num(u64::MAX)],
        score_bits: vec![7, 8, 9],
        counts: vec![3],
        segment: vec![1, 2, 3],
        manifests: vec!["{}".into(), "x".into()],
    };
    assert_eq!(decode(&shoal_conformance_wasm::encode("x", &out)), ("x".to_string(), out));
}

#[test]
fn wasm_builds_under_wasmtime_give_the_committed_outputs() {
    use wasmtime::{Engine, Instance, Module, Store};
    for simd in [true, false] {
        let path = build_wasm(simd);
        let engine = Engine::default();
        let module = Module::from_file(&engine, &path).unwrap();
        let mut store = Store::new(&engine, ());
        let instance = Instance::new(&mut store, &module, &[]).expect("the module needs no imports");
        let configs = instance.get_typed_func::<(), u32>(&mut store, "shoal_conformance_configs").unwrap();
        let run_fn = instance.get_typed_func::<u32, u32>(&mut store, "shoal_conformance_run").unwrap();
        let len_fn = instance.get_typed_func::<(), u32>(&mut store, "shoal_conformance_output_len").unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let zero_alloc = instance.get_typed_func::<(), u32>(&mut store, "shoal_zero_alloc_check").unwrap();
        assert_eq!(
            zero_alloc.call(&mut store, ()).unwrap(),
            0,
            "searches in wasm (simd: {simd}) allocated after warm-up"
        );
        assert_eq!(configs.call(&mut store, ()).unwrap() as usize, CONFIGS.len());
        for (i, config) in CONFIGS.iter().enumerate() {
            let ptr = run_fn.call(&mut store, i as u32).unwrap() as usize;
            let len = len_fn.call(&mut store, ()).unwrap() as usize;
            let (kernels, out) = decode(&memory.data(&store)[ptr..ptr + len]);
            assert_eq!(kernels, if simd { "simd128" } else { "scalar" }, "the build picked the wrong kernels");
            check_digest(config, &format!("{kernels} (wasmtime)"), &out);
        }
    }
}
