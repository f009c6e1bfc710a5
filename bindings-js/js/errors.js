// Errors: every failure of a Shoal call is a `ShoalError` with a stable `code`.

/** Error thrown by every Shoal call; `code` is stable and machine-readable. */
export class ShoalError extends Error {
  /** @type {"ShoalError"} */
  name = "ShoalError";

  /**
   * @param {string} code
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    /** @type {import("./index.js").ErrorCode} */
    this.code = /** @type {any} */ (code);
  }
}

/** The trap that broke this module instance, if one did. */
let trapped = /** @type {Error | null} */ (null);

/**
 * Throws if an earlier call trapped inside wasm: after a trap (a Rust panic compiles to
 * `unreachable`) the instance's memory may be in any state, so nothing may use it again.
 */
export function checkNotTrapped() {
  if (trapped) {
    throw new ShoalError(
      "internal",
      `an earlier Shoal call trapped inside WebAssembly (${trapped.message}): this module instance cannot be used any more; load the page or process again`,
      { cause: trapped },
    );
  }
}

/**
 * Runs `f`, turning errors thrown by the wasm side into `ShoalError`s: the engine's own errors
 * keep their code; a trap (`WebAssembly.RuntimeError`: a bug in Shoal) is an `internal` error,
 * and every later call fails with one too.
 * @template T
 * @param {() => T} f
 * @returns {T}
 */
export function call(f) {
  checkNotTrapped();
  try {
    return f();
  } catch (e) {
    if (e instanceof ShoalError) throw e;
    if (e instanceof WebAssembly.RuntimeError) {
      trapped = e;
      throw new ShoalError(
        "internal",
        `Shoal trapped inside WebAssembly (${e.message}): this is a bug in Shoal; the module instance cannot be used any more`,
        { cause: e },
      );
    }
    if (e instanceof Error && typeof (/** @type {any} */ (e).code) === "string") {
      throw new ShoalError(/** @type {any} */ (e).code, e.message, { cause: e });
    }
    throw e;
  }
}
