// The one assertion every test of typed errors uses.
import { expect } from "vitest";
import { ShoalError } from "../js/index.js";

/** Runs `f`, expecting a ShoalError with `code`; returns it. */
export function expectShoalError(f, code) {
  let err;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err, `expected a ShoalError ${code}`).toBeInstanceOf(ShoalError);
  expect(err).toBeInstanceOf(Error);
  expect(err.name).toBe("ShoalError");
  expect(err.code).toBe(code);
  expect(typeof err.message).toBe("string");
  expect(err.message.length).toBeGreaterThan(0);
  return err;
}

/** Awaits `f()`, expecting it to reject with a ShoalError with `code`; returns it. */
export async function expectRejection(f, code) {
  let err;
  try {
    await f();
  } catch (e) {
    err = e;
  }
  expect(err, `expected a rejection with a ShoalError ${code}`).toBeInstanceOf(ShoalError);
  expect(err.code, err.message).toBe(code);
  expect(err.message.length).toBeGreaterThan(0);
  return err;
}
