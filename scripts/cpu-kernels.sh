#!/usr/bin/env bash
# Prints the kernel variants this machine's CPU has, comma-separated, as shoal_kernels names
# them ("sse2,avx2,avx512" on a recent x86_64, "neon" on aarch64). Read from the CPU flags that
# Linux reports, independently of the kernels' own run-time detection: `make test` hands the
# list to SHOAL_REQUIRE_KERNELS, so a variant the machine has but the tests did not run (a
# detection bug, a missing instantiation) fails instead of passing as "skipped".
set -euo pipefail
case "$(uname -m)" in
  x86_64)
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    has() { [[ "$flags" == *" $1 "* ]]; }
    out="sse2"
    if has avx2 && has popcnt; then
      out="$out,avx2"
      if has avx512f; then out="$out,avx512"; fi
    fi
    ;;
  aarch64) out="neon" ;;
  *) out="" ;;
esac
echo "$out"
