import type { InitOptions, SearchRequest, SearchResponse } from "./index.js";

/** A collection living in a dedicated module Web Worker (browsers, Deno): search off the main thread. */
export class SearchWorker {
  private constructor();
  /**
   * Starts a worker and opens a segment file in it. A Uint8Array that owns its buffer (or an
   * ArrayBuffer) is transferred — detached on this side — otherwise copied.
   */
  static open(bytes: Uint8Array | ArrayBuffer, opts?: { workerUrl?: string | URL; init?: InitOptions }): Promise<SearchWorker>;
  /** A search in the worker; a Float32Array vector that owns its buffer is transferred (detached here). */
  search(req: SearchRequest): Promise<SearchResponse>;
  /** Stops the worker; pending searches are rejected. */
  terminate(): void;
}
