"""QPS at a recall target, read off an engine's recall/QPS frontier.

A sweep gives points (recall, QPS). The frontier keeps the points no other point beats on both
(no higher QPS at a recall at least as high), sorted by recall. The QPS at a target recall is
interpolated linearly between the two frontier points around it — not the first sweep point
reaching it, which flatters whichever engine happens to land just above the target.
"""


def frontier(points):
    """The Pareto frontier of ``(recall, qps)`` pairs, recall ascending (QPS descending)."""
    out, best = [], float("-inf")
    for recall, qps in sorted(points, key=lambda p: (-p[0], -p[1])):
        if qps > best:
            out.append((recall, qps))
            best = qps
    return out[::-1]


def qps_at(points, target):
    """QPS at ``target`` recall on the frontier of ``points``, or None when no point reaches it.

    Returns ``(qps, (lo, hi))``: the frontier points interpolated between (``lo`` is None when the
    fastest point already reaches the target)."""
    f = frontier(points)
    if not f or f[-1][0] < target:
        return None
    i = next(i for i, (r, _) in enumerate(f) if r >= target)
    if i == 0 or f[i][0] == target:
        return f[i][1], (None, f[i])
    (r1, q1), (r2, q2) = f[i - 1], f[i]
    return q1 + (q2 - q1) * (target - r1) / (r2 - r1), (f[i - 1], f[i])
