// The cross-target conformance scenario, replayed through the npm API. The native Rust test
// (`cargo test -p shoal-tests --test conformance`) writes one fixture per configuration to
// `target/conformance/<name>.json` + `<name>.shoal`: the scenario's ops, its queries, the
// expected ids and f32 score bits of every result, the manifests of the segment sets it wrote,
// and the final segment bytes. Every one of them must come out identical here. Missing fixtures fail the test: they are not optional.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";

const dir =
  process.env.SHOAL_CONFORMANCE_DIR ?? fileURLToPath(new URL("../../target/conformance/", import.meta.url));

function fixtureNames() {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => f.slice(0, -5))
    .sort();
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function scoreBits(score) {
  f32[0] = score;
  return u32[0];
}

/** A fixture's id (decimal text, or a UUID's text) as the npm API takes and returns it. */
const fixtureId = (/** @type {string} */ s) => (s.includes("-") ? s : BigInt(s));

/** A fixture's ids for `insert` and `delete`: integers as a `BigUint64Array`, or, when some
 * are UUIDs, a mixed array. */
function fixtureIds(/** @type {string[]} */ ids) {
  return ids.some((s) => s.includes("-")) ? ids.map(fixtureId) : BigUint64Array.from(ids, (s) => BigInt(s));
}

/** Replays a fixture; returns what it produced in the fixture's own shape. */
function replay(fx) {
  const fields = fx.fields ?? undefined;
  const nested = fx.nested ?? false;
  const sparse = fx.sparse ?? undefined;
  // Named configurations declare their dense vectors; each insert gives them by name.
  let col = fx.vectors
    ? new Collection({ vectors: fx.vectors, fields, nested, sparse })
    : new Collection({ dim: fx.dim, metric: fx.metric, fields, nested, sparse });
  const filters = fx.filters ?? [];
  const texts = fx.texts ?? [];
  const requests = fx.requests ?? [];
  const out = { ids: [], scoreBits: [], counts: [], manifests: [] };
  const queries = Float32Array.from(fx.queries);
  const nq = queries.length / fx.dim;
  for (const op of fx.ops) {
    switch (op.op) {
      case "insert":
        col.insert({
          ids: fixtureIds(op.ids),
          vectors: Array.isArray(op.vectors)
            ? Float32Array.from(op.vectors)
            : Object.fromEntries(Object.entries(op.vectors).map(([name, v]) => [name, Float32Array.from(v)])),
          payloads: op.payloads,
          sparse: op.sparse,
        });
        break;
      case "delete":
        col.delete(fixtureIds(op.ids));
        break;
      case "seal": {
        // The scenario's options are the native host's JSON (snake_case); the JavaScript
        // option is camelCase.
        const { codes_only: codesOnly, ...rest } = op.options ?? {};
        col.seal(op.options && codesOnly !== undefined ? { ...rest, codesOnly } : op.options);
        break;
      }
      case "roundtrip": {
        const bytes = col.toBytes();
        col.free();
        col = Collection.fromBytes(bytes);
        break;
      }
      case "set_roundtrip": {
        const { manifest, files } = col.toSet();
        out.manifests.push(manifest);
        col.free();
        col = Collection.openSet(manifest, files);
        break;
      }
      case "search":
        for (let q = 0; q < nq; q++) {
          const filter = filters.length > 0 ? filters[q % filters.length] : null;
          const text = texts.length > 0 ? texts[q % texts.length] : "";
          const alone = text !== "" && Math.floor(q / texts.length) % 2 === 1;
          const res =
            requests.length > 0
              ? col.search(requests[q])
              : col.search({
                  ...(alone ? {} : { vector: queries.subarray(q * fx.dim, (q + 1) * fx.dim) }),
                  limit: fx.k,
                  ...(filter === null ? {} : { filter }),
                  ...(text === "" ? {} : { text }),
                });
          out.counts.push(res.points.length);
          for (const p of res.points) {
            out.ids.push(typeof p.id === "string" ? p.id : BigInt(p.id));
            out.scoreBits.push(scoreBits(p.score));
          }
        }
        break;
      default:
        throw new Error(`unknown op ${JSON.stringify(op.op)} in fixture ${fx.name}`);
    }
  }
  out.segment = col.toBytes();
  col.free();
  return out;
}

/** Number of positions where `a` and `b` differ (plus the length difference), and the first. */
function diff(a, b) {
  let count = Math.abs(a.length - b.length);
  let first = -1;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      count++;
      if (first < 0) first = i;
    }
  }
  return { count, first };
}

/**
 * Defines the conformance tests for one build.
 * @param {{ simd: boolean, kernels: string }} build
 */
export function conformanceSuite(build) {
  describe(`conformance (${build.kernels})`, () => {
    it(`loads the ${build.kernels} build`, async () => {
      const info = await init({ simd: build.simd });
      expect(info.simd).toBe(build.simd);
      expect(info.kernels).toBe(build.kernels);
      expect(new Collection({ dim: 3, metric: "l2" }).kernels).toBe(build.kernels);
    });

    const names = fixtureNames();
    if (names.length === 0) {
      it("has fixtures", () => {
        throw new Error(
          `no conformance fixtures in ${dir}: run \`cargo test -p shoal-tests --test conformance\` first`,
        );
      });
    }
    for (const name of names) {
      it(name, { timeout: 300_000 }, async () => {
        await init({ simd: build.simd });
        const fx = JSON.parse(readFileSync(`${dir}/${name}.json`, "utf8"));
        const segmentFile = `${dir}/${fx.segment ?? `${name}.shoal`}`;
        expect(existsSync(segmentFile), `${segmentFile} is missing`).toBe(true);
        const expectedSegment = new Uint8Array(readFileSync(segmentFile));
        const got = replay(fx);
        const expected = fx.expected;

        const counts = diff(got.counts, expected.counts);
        expect(counts.count, `result counts differ (first at query ${counts.first})`).toBe(0);
        const ids = diff(got.ids, expected.ids.map(fixtureId));
        expect(ids.count, `ids differ (first at result ${ids.first})`).toBe(0);
        const bits = diff(got.scoreBits, expected.score_bits);
        expect(bits.count, `score bits differ (first at result ${bits.first})`).toBe(0);
        expect(got.ids.length).toBeGreaterThan(0);
        expect(got.manifests, "segment set manifests").toEqual(expected.manifests);

        expect(got.segment.length, "segment length").toBe(expectedSegment.length);
        const seg = diff(got.segment, expectedSegment);
        expect(seg.count, `segment bytes differ (first at byte ${seg.first})`).toBe(0);
      });
    }
  });
}
