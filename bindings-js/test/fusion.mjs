// Fusion formulas written out for the tests (shared by the npm and the Qdrant JS client tests).

const f = Math.fround;

/**
 * The fusion formulas of docs/format.md ("Fusion"), in f32 (Math.fround after every operation):
 * `lists` of `{ id, score }` best first; RRF with `k` and optional `weights`, or DBSF (`dbsf`;
 * `lower[l]` when list `l` holds squared distances). (Terms are finite for the inputs the tests
 * give; the engine also clamps overflowing terms and sums to ±f32::MAX.) Fused score descending, then the best position, then
 * the id.
 * @param {{ id: any, score: number }[][]} lists
 * @param {{ k?: number, weights?: number[], dbsf?: boolean, lower?: boolean[] }} how
 */
export function fused(lists, { k, weights, dbsf, lower = [] }) {
  const sums = new Map();
  lists.forEach((list, l) => {
    let terms;
    if (!dbsf) {
      const w = f(weights ? weights[l] : 1);
      terms = list.map((_, p) => (w <= 0 ? 0 : f(1 / f(f(f(p + 1) / w) + f(k) - 1))));
    } else if (list.length === 1) {
      terms = [0.5];
    } else {
      // Squared distances enter as negated distances.
      const s = list.map((x) => (lower[l] ? -f(Math.sqrt(Math.max(x.score, 0))) : x.score));
      let mean = 0;
      let agg = 0;
      s.forEach((x, j) => {
        const d = f(x - mean);
        mean = f(mean + f(d / (j + 1)));
        agg = f(agg + f(d * f(x - mean)));
      });
      const sigma = f(Math.sqrt(f(agg / (s.length - 1))));
      const lo = f(mean - f(3 * sigma));
      const hi = f(mean + f(3 * sigma));
      terms = s.map((x) => (lo === hi ? 0.5 : f(f(x - lo) / f(hi - lo))));
    }
    list.forEach((x, p) => {
      const e = sums.get(x.id);
      if (e) {
        e.score = f(e.score + terms[p]);
        e.best = Math.min(e.best, p);
      } else sums.set(x.id, { id: x.id, score: terms[p], best: p });
    });
  });
  // Ids in Shoal's (and Qdrant's) order: numbers ascending, then UUIDs by their text.
  const byId = (a, b) =>
    typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : typeof a === "string" ? 1 : -1;
  return [...sums.values()].sort((a, b) => b.score - a.score || a.best - b.best || byId(a.id, b.id));
}
