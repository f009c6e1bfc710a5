// Persistence in browsers: OPFS and IndexedDB.

import { Collection } from "./collection.js";
import { ShoalError } from "./errors.js";

// A collection persists as its segment file (`toBytes()`): the same bytes as natively, so a
// segment saved here opens in the native host, and one built by `shoal build` opens here.

/**
 * Saves the collection's segment (sealing first) to the origin private file system as `name`.
 * @param {import("./index.js").Collection} col
 * @param {string} name
 */
export async function saveToOPFS(col, name) {
  const root = await opfsRoot();
  const handle = await root.getFileHandle(name, { create: true });
  const w = await handle.createWritable();
  try {
    await w.write(col.toBytes());
  } finally {
    await w.close();
  }
}

/**
 * Opens a segment saved with {@link saveToOPFS} (or any segment file put there).
 * @param {string} name
 */
export async function openFromOPFS(name) {
  const root = await opfsRoot();
  let handle;
  try {
    handle = await root.getFileHandle(name);
  } catch (e) {
    throw new ShoalError("not_found", `no OPFS file named ${JSON.stringify(name)}`, { cause: e });
  }
  const file = await handle.getFile();
  return Collection.fromBytes(new Uint8Array(await file.arrayBuffer()));
}

async function opfsRoot() {
  const storage = /** @type {any} */ (globalThis.navigator)?.storage;
  if (!storage?.getDirectory) throw new ShoalError("unsupported", "this runtime has no origin private file system");
  return storage.getDirectory();
}

/**
 * Saves the collection's segment (sealing first) in IndexedDB under `key`
 * (database `opts.db`, default "shoal"; object store `opts.store`, default "segments").
 * @param {import("./index.js").Collection} col
 * @param {string} key
 * @param {{ db?: string, store?: string }} [opts]
 */
export async function saveToIndexedDB(col, key, opts = {}) {
  const bytes = col.toBytes();
  await idbRequest(opts, "readwrite", (/** @type {any} */ s) => s.put(bytes, key));
}

/**
 * Opens a segment saved with {@link saveToIndexedDB}.
 * @param {string} key
 * @param {{ db?: string, store?: string }} [opts]
 */
export async function openFromIndexedDB(key, opts = {}) {
  const bytes = await idbRequest(opts, "readonly", (/** @type {any} */ s) => s.get(key));
  if (bytes === undefined) throw new ShoalError("not_found", `no IndexedDB segment under ${JSON.stringify(key)}`);
  return Collection.fromBytes(bytes);
}

/**
 * Runs one request on the object store, opening (and creating) the database.
 * @param {{ db?: string, store?: string }} opts
 * @param {"readonly" | "readwrite"} mode
 * @param {(store: any) => any} make
 * @returns {Promise<any>}
 */
function idbRequest({ db = "shoal", store = "segments" }, mode, make) {
  const idb = /** @type {any} */ (globalThis).indexedDB;
  if (!idb) return Promise.reject(new ShoalError("unsupported", "this runtime has no IndexedDB"));
  return new Promise((resolve, reject) => {
    const open = idb.open(db, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(store);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const conn = open.result;
      let tx, req;
      try {
        // Throws when the database exists without this store (it is created with version 1).
        tx = conn.transaction(store, mode);
        req = make(tx.objectStore(store));
      } catch (e) {
        conn.close();
        reject(e);
        return;
      }
      /** @type {any} */
      let value;
      req.onsuccess = () => (value = req.result);
      tx.oncomplete = () => {
        conn.close();
        resolve(value);
      };
      tx.onerror = () => {
        conn.close();
        reject(tx.error);
      };
    };
  });
}
