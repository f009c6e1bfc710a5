// What queries read by ranges cost, summarised as the native benchmark summarises it: shared by
// bench/node/remote.mjs (a segment) and bench/node/remote_set.mjs (a set).

/**
 * Per-query costs (means and maxima of waves, requests and KB; time percentiles) and recall@10:
 * the fraction of the truth's ids found.
 * `searches[i]`: `{ ms, io: { waves, requests, bytes }, rows: [[id, …], …] }` (ids as strings);
 * `truth[i]`: query i's exact top 10 ids (or the local answer's, fewer when it has fewer).
 */
export function summary(searches, truth) {
  const n = searches.length;
  const mean = (f) => searches.reduce((a, s) => a + f(s), 0) / n;
  const max = (f) => searches.reduce((a, s) => Math.max(a, f(s)), 0);
  const ms = searches.map((s) => s.ms).sort((a, b) => a - b);
  const pct = (p) => ms[Math.round((n - 1) * p)];
  let hits = 0;
  let wanted = 0;
  searches.forEach((s, i) => {
    wanted += truth[i].length;
    const want = new Set(truth[i].map(String));
    hits += s.rows.filter(([id]) => want.has(id)).length;
  });
  return {
    waves_mean: mean((s) => s.io.waves),
    waves_max: max((s) => s.io.waves),
    requests_mean: mean((s) => s.io.requests),
    requests_max: max((s) => s.io.requests),
    kb_mean: mean((s) => s.io.bytes / 1e3),
    kb_max: max((s) => s.io.bytes / 1e3),
    ms_p50: pct(0.5),
    ms_p90: pct(0.9),
    recall_at_10: hits / Math.max(1, wanted),
  };
}
