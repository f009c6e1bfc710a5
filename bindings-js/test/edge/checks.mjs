// The checks of the browser and edge test scripts: one line per check, then a summary.

let passed = 0;
let failed = 0;

/** Records a check and prints it ("ok" or "FAIL", its name, the detail). */
export function check(name, ok, detail = "") {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ` — ${detail}` : ""}`);
}

/** Prints "N passed, N failed" and exits: non-zero on any failure, or when nothing passed. */
export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 || passed === 0 ? 1 : 0);
}
