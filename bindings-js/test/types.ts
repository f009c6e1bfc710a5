// Type-checked by `make lint` (tsc -p bindings-js/tsconfig.json), never run: every export of
// the implementation (js/*.js, typed by their JSDoc under checkJs) is assignable to its
// declaration in js/index.d.ts, and the declarations (worker.d.ts too) type a real use.
import type * as Api from "../js/index.js";
import type * as WorkerApi from "../js/worker.js";
import { Batch, Collection } from "../js/collection.js";
import { ShoalError } from "../js/errors.js";
import { init, simdSupported, wasmMemoryBytes } from "../js/load.js";
import { openFromIndexedDB, openFromOPFS, saveToIndexedDB, saveToOPFS } from "../js/persist.js";
import { RemoteCollection, openRemote } from "../js/remote.js";

export const implementation: {
  ShoalError: typeof Api.ShoalError;
  init: typeof Api.init;
  simdSupported: typeof Api.simdSupported;
  wasmMemoryBytes: typeof Api.wasmMemoryBytes;
  Collection: typeof Api.Collection;
  saveToOPFS: typeof Api.saveToOPFS;
  openFromOPFS: typeof Api.openFromOPFS;
  saveToIndexedDB: typeof Api.saveToIndexedDB;
  openFromIndexedDB: typeof Api.openFromIndexedDB;
} = {
  ShoalError,
  init,
  simdSupported,
  wasmMemoryBytes,
  Collection,
  saveToOPFS,
  openFromOPFS,
  saveToIndexedDB,
  openFromIndexedDB,
};
// (worker.js is held to worker.d.ts in worker.js itself: an import of "../js/worker.js" here
// resolves to the declaration.)

// Batch's constructor is private in the declarations: its instances are compared.
export const batch = (b: InstanceType<typeof Batch>): Api.Batch => b;
// `Collection.openRemote` (a dynamic import of remote.js) as declared.
export const remote: (s: Api.RemoteSource, o?: Api.RemoteOptions) => Promise<Api.RemoteCollection> = openRemote;
export const remoteCollection = (r: InstanceType<typeof RemoteCollection>): Api.RemoteCollection => r;

// A use of the declarations, as a TypeScript user writes it.
export async function use(C: typeof Api.Collection, W: typeof WorkerApi.SearchWorker): Promise<number> {
  const col = new C({ dim: 3, metric: "cosine", fields: { tag: "keyword", title: "text" } });
  col.insert({ ids: [1, 2n], vectors: new Float32Array(6), payloads: [{ tag: "a" }, null] });
  const named = new C({ vectors: { text: { dim: 2, metric: "cosine" }, image: { dim: 3, metric: "dot" } } });
  named.insert({ ids: [1], vectors: { text: [1, 0], image: new Float32Array(3) } });
  // @ts-expect-error: named vectors replace dim and metric
  new C({ dim: 3, vectors: { text: { dim: 2, metric: "cosine" } } });
  const filter: Api.Filter = { must: [{ key: "tag", match: { value: "a" } }], must_not: [{ key: "year", range: { lt: 2000 } }] };
  const res: Api.SearchResponse = col.search({ vector: [1, 0, 0], text: "whale", limit: 5, filter, with_payload: true });
  const got: Api.PointRecord[] = col.get([1], { withVector: true });
  const page: Api.ScrollPage = col.scroll({ filter, limit: 10 });
  for await (const p of col.points({ filter })) got.push(p);
  const worker = await W.open(col.toBytes());
  await worker.search({ vector: new Float32Array(3), limit: 1 });
  const far = await C.openRemote("https://cdn.example/v.shoal", { bootstrapBytes: 142080, headers: { authorization: "x" } });
  const hit = await far.search({ vector: new Float32Array(far.dim), limit: 10, params: { nprobe: 32 } });
  const bytes = new Uint8Array(64);
  await C.openRemote({ read: async (offset, length) => bytes.subarray(offset, offset + length), size: 64 });
  return hit.io.requests + far.opened.waves + res.points.length + got.length + page.points.length + col.count(filter) + Object.keys(col.fields).length;
}
