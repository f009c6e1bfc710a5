// The conformance scenario through the SIMD128 build: identical ids, score bits and segment
// bytes to the native run.
import { conformanceSuite } from "./conformance.js";

conformanceSuite({ simd: true, kernels: "simd128" });
