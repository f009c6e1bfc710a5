// Ids and vectors from JavaScript values: checked and converted once, before a wasm call.

import { ShoalError } from "./errors.js";

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = (1n << 64n) - 1n;

/** An id as returned to users: a number when it is safe, a BigInt otherwise. */
export function userId(/** @type {bigint} */ id) {
  return id <= MAX_SAFE ? Number(id) : id;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * The ids of a wasm `SearchOutput` as returned to users: numbers (BigInts beyond 2^53) and
 * UUIDs as their canonical text (36 characters, lowercase).
 * @param {any} out
 * @returns {Array<number | bigint | string>}
 */
export function userIds(out) {
  const ids = out.ids();
  /** @type {Uint8Array} */
  const uuids = out.uuids();
  const list = new Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    if (uuids.length > 0 && uuids[17 * i] === 1) {
      let t = "";
      for (let j = 0; j < 16; j++) t += (j === 4 || j === 6 || j === 8 || j === 10 ? "-" : "") + HEX[uuids[17 * i + 1 + j]];
      list[i] = t;
    } else {
      list[i] = userId(ids[i]);
    }
  }
  return list;
}

/** Whether `ids` is one of the id array types. @param {any} ids */
export function isIdArray(ids) {
  return (
    Array.isArray(ids) ||
    ids instanceof BigUint64Array ||
    ids instanceof Float64Array ||
    ids instanceof Uint32Array ||
    ids instanceof Uint16Array ||
    ids instanceof Uint8Array ||
    ids instanceof Int32Array
  );
}

/**
 * Normalises user ids: a `BigUint64Array` as is (`u64`), a list holding UUID strings as JSON
 * text (`json`), a list of BigInts checked and converted to a `BigUint64Array`, anything else
 * (numbers) as an array-like of numbers that the wasm side checks.
 * @param {any} ids
 * @returns {{ big: BigUint64Array } | { numbers: ArrayLike<number> } | { json: string, n: number }}
 */
export function normalizeIds(ids) {
  if (typeof ids === "number" || typeof ids === "bigint" || typeof ids === "string") ids = [ids];
  if (!isIdArray(ids)) {
    throw new ShoalError(
      "invalid_id",
      "ids must be an array of numbers, BigInts or UUID strings, a Uint32Array, a Float64Array or a BigUint64Array",
    );
  }
  if (ids instanceof BigUint64Array) return { big: ids };
  if (Array.isArray(ids) && ids.some((x) => typeof x === "string")) {
    // UUIDs (any form Qdrant reads), mixed with integers: checked by the wasm side.
    const json = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) json[i] = idJson(ids[i], `id of point ${i}`);
    return { json: `[${json.join(",")}]`, n: ids.length };
  }
  if (Array.isArray(ids) && ids.some((x) => typeof x === "bigint")) {
    const big = new BigUint64Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const x = ids[i];
      const v = typeof x === "bigint" ? x : Number.isSafeInteger(x) ? BigInt(x) : -1n;
      if (v < 0n || v > U64_MAX) {
        throw new ShoalError("invalid_id", `id of point ${i} is not an integer in 0..2^64`);
      }
      big[i] = v;
    }
    return { big };
  }
  return { numbers: ids };
}

/** A `Float32Array` of the given vector data, converted once if needed. */
export function toFloat32(/** @type {any} */ v, /** @type {string} */ code, /** @type {string} */ what) {
  if (v instanceof Float32Array) return v;
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Float32Array.from(/** @type {any} */ (v));
  throw new ShoalError(code, `${what} must be a Float32Array or an array of numbers`);
}

/**
 * One id as JSON text: decimal digits for a number (an integer in 0..=2^53) or a BigInt (in
 * 0..2^64), a JSON string for a string (a UUID, checked by the wasm side); `invalid_id`
 * otherwise, `what` naming it.
 * @param {any} x
 * @param {string} what
 */
export function idJson(x, what) {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint" ? x >= 0n && x <= U64_MAX : Number.isInteger(x) && x >= 0 && x <= 2 ** 53) return String(x);
  throw new ShoalError("invalid_id", `${what} is not an integer in 0..=2^53 (use BigInt ids beyond) or a UUID string`);
}
