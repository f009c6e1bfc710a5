// `Collection.openRemote` through the remote module's scalar build (what engines without
// SIMD128 load): the native results, bit for bit (remote-fixtures.js).
import { equalitySuite, withServers } from "./remote-fixtures.js";

equalitySuite(withServers(), false);
