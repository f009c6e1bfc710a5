// `shoal serve` for the browser tests: the native host (target/debug/shoal, built by
// `cargo build -p shoal-host` if missing) serving the repository under `/ui/`.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The debug `shoal` binary of the repository at `root`, built if missing. */
export function shoalBinary(root) {
  const shoal = join(root, "target", "debug", "shoal");
  if (!existsSync(shoal)) {
    const b = spawnSync("cargo", ["build", "-p", "shoal-host"], { cwd: root, encoding: "utf8", timeout: 900_000 });
    if (b.status !== 0) throw new Error(`cargo build -p shoal-host failed: ${String(b.stderr).slice(-500)}`);
  }
  return shoal;
}

/** Starts `shoal serve` on 127.0.0.1 (a free port) over `data` (default: a new empty folder,
 * removed on close) with `--static-dir staticDir` (default `root`); resolves `{ base, origin,
 * close }`, `origin` being where that folder is served (`base + "/ui"`), `close()` a promise
 * that the server has exited (and its own folder is removed). */
export async function shoalServe(root, { data, staticDir = root } = {}) {
  const shoal = shoalBinary(root);
  const own = data === undefined;
  const dir = own ? mkdtempSync(join(tmpdir(), "shoal-edge-serve-")) : data;
  const child = spawn(shoal, ["serve", "--data", dir, "--addr", "127.0.0.1:0", "--static-dir", staticDir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise((resolveExit) => child.once("exit", resolveExit));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    await exited;
    if (own) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const addr = await new Promise((resolveAddr, reject) => {
      let log = "";
      const timer = setTimeout(() => reject(new Error(`shoal serve did not start: ${log}`)), 30_000);
      child.stderr.on("data", (chunk) => {
        log += chunk;
        for (const line of log.split("\n")) {
          let ev = null;
          try {
            ev = JSON.parse(line);
          } catch {
            continue; // a partial or non-JSON line
          }
          if (ev?.event === "listening") {
            clearTimeout(timer);
            resolveAddr(ev.addr);
          }
        }
      });
      child.on("exit", (code) => reject(new Error(`shoal serve exited (${code}): ${log}`)));
    });
    return { base: `http://${addr}`, origin: `http://${addr}/ui`, close };
  } catch (e) {
    close();
    throw e;
  }
}
