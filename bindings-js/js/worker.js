// Search off the main thread: a collection opened inside a module Web Worker (browsers, Deno),
// queried with promises. Query vectors that own their buffer are transferred, not copied.
//
//   import { SearchWorker } from "shoal/worker";
//   const w = await SearchWorker.open(segmentBytes);       // Uint8Array / ArrayBuffer (transferred)
//   const res = await w.search({ vector: q, limit: 10 });  // the same response as Collection.search
//   w.terminate();
//
// This file is both the main-thread API and, inside the worker, the worker's body.
import { Collection, ShoalError, init } from "./index.js";

const scope = /** @type {any} */ (globalThis);
const inWorker = typeof scope.WorkerGlobalScope !== "undefined" && globalThis instanceof scope.WorkerGlobalScope;

if (inWorker) {
  /** @type {Collection | null} */
  let col = null;
  globalThis.onmessage = async (e) => {
    const { id, op, bytes, req, initOptions } = e.data;
    try {
      if (op === "open") {
        await init(initOptions ?? {});
        col?.free();
        col = Collection.fromBytes(new Uint8Array(bytes));
        globalThis.postMessage({ id, ok: { len: col.len, dim: col.dim } });
      } else if (op === "search") {
        if (!col) throw new ShoalError("not_initialized", "the worker has no open collection");
        const res = col.search(req);
        // Ids may be BigInts (beyond 2^53): structured clone carries them as they are.
        globalThis.postMessage({ id, ok: res });
      }
    } catch (e) {
      const err = /** @type {any} */ (e);
      globalThis.postMessage({ id, err: { code: err?.code ?? "internal", message: String(err?.message ?? err) } });
    }
  };
}

/** A collection living in a dedicated Web Worker. */
export class SearchWorker {
  #worker;
  #next = 0;
  #pending = new Map();

  /** @param {Worker} worker */
  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = (e) => {
      const { id, ok, err } = e.data;
      const p = this.#pending.get(id);
      if (!p) return;
      this.#pending.delete(id);
      if (err) p.reject(new ShoalError(err.code, err.message));
      else p.resolve(ok);
    };
    worker.onerror = (e) => {
      for (const p of this.#pending.values()) p.reject(new ShoalError("internal", `worker error: ${e.message ?? e}`));
      this.#pending.clear();
    };
  }

  /**
   * Starts a worker and opens `bytes` (a segment file) in it. The bytes' buffer is transferred
   * when they own it (the caller's array is then detached), copied otherwise.
   * @param {Uint8Array | ArrayBuffer} bytes
   * @param {{ workerUrl?: string | URL, init?: object }} [opts]
   */
  static async open(bytes, opts = {}) {
    const url = opts.workerUrl ?? new URL("./worker.js", import.meta.url);
    const w = new SearchWorker(new Worker(url, { type: "module" }));
    /** @type {ArrayBufferLike | null} */
    let buf = bytes instanceof ArrayBuffer ? bytes : null;
    if (!buf) {
      const u8 = bytes instanceof Uint8Array ? bytes : null;
      if (!u8) throw new ShoalError("invalid_argument", "SearchWorker.open expects a Uint8Array or an ArrayBuffer");
      buf = u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength ? u8.buffer : u8.slice().buffer;
    }
    await w.#call({ op: "open", bytes: buf, initOptions: opts.init }, [buf]);
    return w;
  }

  /**
   * Runs a search in the worker (the request of `Collection.search`). A `Float32Array` vector
   * that owns its buffer is transferred (detached here), any other vector is copied.
   * @param {any} req
   */
  search(req) {
    /** @type {Transferable[]} */
    const transfer = [];
    const v = req?.vector;
    if (v instanceof Float32Array && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) transfer.push(v.buffer);
    return this.#call({ op: "search", req }, transfer);
  }

  /** Stops the worker (pending searches are rejected). */
  terminate() {
    this.#worker.terminate();
    for (const p of this.#pending.values()) p.reject(new ShoalError("freed", "the worker was terminated"));
    this.#pending.clear();
  }

  /**
   * @param {Record<string, any>} msg
   * @param {Transferable[]} transfer
   * @returns {Promise<any>}
   */
  #call(msg, transfer) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ...msg }, transfer);
    });
  }
}

// Held to its declaration by `make lint` (tsc --checkJs): an import of "./worker.js" resolves to
// worker.d.ts, so these fail to type-check if the two disagree (the constructor is private there:
// `SearchWorker.open` makes them).
/** @type {typeof import("./worker.js").SearchWorker.open} */
const declaredOpen = SearchWorker.open;
/** @type {(w: SearchWorker) => import("./worker.js").SearchWorker} */
const declaredInstance = (w) => w;
void [declaredOpen, declaredInstance];
