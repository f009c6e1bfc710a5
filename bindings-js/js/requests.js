// Requests to the wasm side and the JavaScript form of its answers.

import { ShoalError } from "./errors.js";
import { toFloat32, userIds } from "./values.js";

/**
 * JSON text of a request or filter, BigInts (ids beyond 2^53, e.g. in `has_id`) written as the
 * integers they are, which `JSON.stringify` alone refuses: each becomes a string marked with a
 * NUL and a random tag (so no text of the request passes for one), replaced by its digits after.
 * Typed arrays (a prefetch's `Float32Array` vector) are written as arrays of their numbers.
 * @param {any} value
 */
export function toJson(value) {
  let mark = "";
  const text = JSON.stringify(value, (_, x) => {
    if (ArrayBuffer.isView(x) && !(x instanceof DataView)) return Array.from(/** @type {any} */ (x));
    if (typeof x !== "bigint") return x;
    if (x < 0n) return Number(x); // not an id: the engine names the error
    mark ||= `\u0000${Math.random().toString(36).slice(2)}:`;
    return mark + x;
  });
  if (!mark) return text;
  // JSON writes the NUL as the six characters \u0000.
  const quoted = JSON.stringify(mark).slice(1, -1).replace(/[\\$^.*+?()[\]{}|]/g, "\\$&");
  return text.replace(new RegExp(`"${quoted}(\\d+)"`, "g"), "$1");
}

/**
 * A search request's JSON (without `vector`) and its vector as a Float32Array.
 * @param {any} req
 * @returns {[string, Float32Array | undefined]}
 */
export function requestParts(req) {
  if (req === null || typeof req !== "object" || Array.isArray(req)) {
    throw new ShoalError("invalid_request", "invalid search request: expected an object");
  }
  const { vector, ...rest } = req;
  const v = vector === undefined || vector === null ? undefined : toFloat32(vector, "invalid_request", "vector");
  try {
    return [toJson(rest), v];
  } catch (e) {
    throw new ShoalError("invalid_request", `invalid search request: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * The JavaScript form of a wasm `SearchOutput`, which it frees.
 * @param {any} out
 */
export function results(out) {
  try {
    const ids = userIds(out);
    const scores = out.scores();
    const payloadsJson = out.payloads_json();
    const payloads = payloadsJson === undefined || payloadsJson === null ? null : JSON.parse(payloadsJson);
    const points = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      points[i] = payloads
        ? { id: ids[i], score: scores[i], payload: payloads[i] }
        : { id: ids[i], score: scores[i] };
    }
    return { points, partial: out.partial(), stats: JSON.parse(out.stats_json()) };
  } finally {
    out.free();
  }
}

/**
 * The JavaScript form of a wasm `SearchOutput` of `points`, which it frees: `{ id, payload?,
 * vector? }` per point (`payload`, `vector` only when asked for).
 * @param {any} out
 * @param {number} dim
 * @param {boolean} withPayload
 * @param {boolean} withVector
 */
export function records(out, dim, withPayload, withVector) {
  try {
    const ids = userIds(out);
    const payloadsJson = withPayload ? out.payloads_json() : null;
    const payloads = payloadsJson === undefined || payloadsJson === null ? [] : JSON.parse(payloadsJson);
    const vectors = withVector ? out.vectors() : null;
    const points = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      /** @type {{ id: number | bigint | string, payload?: any, vector?: Float32Array }} */
      const p = { id: ids[i] };
      if (withPayload) p.payload = payloads[i];
      // (The vector asked for by name may have another dimension than the first.)
      if (vectors) p.vector = vectors.slice((i * vectors.length) / ids.length, ((i + 1) * vectors.length) / ids.length);
      points[i] = p;
    }
    return points;
  } finally {
    out.free();
  }
}

/**
 * The `filter` of `count`, `scroll` and `points` as JSON text (`null` when none).
 * @param {any} filter
 */
export function filterJson(filter) {
  if (filter === undefined || filter === null) return "null";
  if (typeof filter !== "object" || Array.isArray(filter)) {
    throw new ShoalError("invalid_request", "invalid search request: filter: expected an object");
  }
  try {
    return toJson(filter);
  } catch (e) {
    throw new ShoalError("invalid_request", `invalid search request: filter: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * The `withPayload` (default true) and `withVector` (default false; a name: that dense vector) options of `get`,
 * `scroll` and `points`.
 * @param {any} opts
 * @returns {[boolean, boolean | string]}
 */
export function withOptions(opts) {
  if (opts === undefined || opts === null) return [true, false];
  if (typeof opts !== "object") throw new ShoalError("invalid_argument", "options must be an object like { withVector: true }");
  const v = opts.withVector;
  return [opts.withPayload !== false, typeof v === "string" ? v : v === true];
}
