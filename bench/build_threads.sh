#!/usr/bin/env bash
# `shoal build` (IVF-RaBitQ, defaults) of synthetic-1m-128 on 1 and on 2 threads, alternating,
# RUNS times each: the median wall time of each, their ratio, peak RSS (all resident pages,
# the mapped input and output included) and peak anonymous memory (the process's own, sampled
# every 20 ms from /proc), and whether the two builds wrote the same bytes. Needs `python3 bench/datasets.py --only synthetic-1m-128` and a
# release build (`make bench-build` does both).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="${SHOAL_CACHE:-$HOME/.cache/shoal}/datasets/synthetic-1m-128/base.npy"
runs="${RUNS:-3}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
declare -A times
# A FIFO held open for reading and writing: `read -t` on it waits out its timeout.
mkfifo "$out/pause"
exec {pause}<> "$out/pause"
for r in $(seq "$runs"); do
  for t in 1 2; do
    /usr/bin/time -f "%e %M" -o "$out/time" "$root/target/release/shoal" --threads "$t" build "$data" \
      --metric l2 --index ivf-rabitq --bits 1 --quiet --out "$out/t$t.shoal" &
    timer=$!
    # The sampler forks nothing (bash builtins only, `read -t` as its sleep): a process per
    # sample would take CPU from the two-thread build.
    anon=0
    pid=""
    while [ -z "$pid" ] && kill -0 "$timer" 2> /dev/null; do
      pid=$(pgrep -P "$timer" -x shoal || true)
      [ -n "$pid" ] || read -r -t 0.01 -u "$pause" || true
    done
    [ -n "$pid" ] || echo "warning: the build's process was not found: no memory sample" >&2
    while [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; do
      while read -r key value _; do
        if [ "$key" = "RssAnon:" ]; then
          [ "$value" -gt "$anon" ] && anon=$value
          break
        fi
      done < "/proc/$pid/status" 2> /dev/null || break
      read -r -t 0.02 -u "$pause" || true
    done
    wait "$timer"
    read -r secs rss < "$out/time"
    times[$t]="${times[$t]:-} $secs"
    echo "run $r, $t thread(s): $secs s, peak RSS $((rss / 1024)) MiB, peak anonymous $((anon / 1024)) MiB"
  done
done
median() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m1=$(median "${times[1]}")
m2=$(median "${times[2]}")
same=no
cmp -s "$out/t1.shoal" "$out/t2.shoal" && same=yes
awk -v a="$m1" -v b="$m2" -v s="$same" 'BEGIN {
  printf "build 1M x 128-d: 1 thread %.2f s, 2 threads %.2f s (medians): %.2fx; identical bytes: %s\n", a, b, a / b, s
}'
[ "$same" = yes ]
