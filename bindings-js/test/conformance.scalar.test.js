// The conformance scenario through the scalar build (what engines without SIMD128 load):
// identical ids, score bits and segment bytes to the native run.
import { conformanceSuite } from "./conformance.js";

conformanceSuite({ simd: false, kernels: "scalar" });
