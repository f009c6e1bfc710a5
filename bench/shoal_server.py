"""Start and stop a `shoal serve` for the benchmarks and the qdrant-client test, and encode
the binary batches its `points/binary` route takes."""

import json
import struct
import subprocess
import threading

# The content type of `POST /collections/{name}/points/binary`.
BINARY = {"content-type": "application/octet-stream"}


def binary_batch(ids, vecs):
    """A binary batch (docs/format.md): `SHB1`, dim, count, flags 0, u64 ids, f32 vectors."""
    import numpy as np

    vecs = np.ascontiguousarray(vecs, dtype="<f4")
    n, dim = vecs.shape
    return struct.pack("<4sIII", b"SHB1", dim, n, 0) + np.asarray(ids, dtype="<u8").tobytes() + vecs.tobytes()


class Server:
    """`shoal serve --data DATA --addr 127.0.0.1:0 EXTRA...`; `url` once it listens.

    `wrap`, if given, is a shell prefix run before `exec` (e.g. joining a cgroup), so the
    server is inside whatever it sets up from its first instruction.
    """

    def __init__(self, binary, data, extra=(), wrap=None):
        args = [str(binary), "serve", "--data", str(data), "--addr", "127.0.0.1:0", *map(str, extra)]
        if wrap:
            args = ["sh", "-c", f"{wrap} && exec " + " ".join(f"'{a}'" for a in args)]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        self.url = None
        for line in self.proc.stderr:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("event") == "listening":
                self.url = "http://" + ev["addr"]
                break
        if self.url is None:
            raise RuntimeError(f"shoal serve did not start (exit {self.proc.wait()})")
        # Keep reading its log so the pipe never fills.
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def alive(self):
        return self.proc.poll() is None

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
