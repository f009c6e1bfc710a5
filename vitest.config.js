// vitest for the npm package's tests (bindings-js/test/). No test may fail on wall-clock time:
// the machines are shared and CI has two cores, on which the test files run in parallel beside
// the servers some of them start (nginx, the fault proxy). A test gets two minutes.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
