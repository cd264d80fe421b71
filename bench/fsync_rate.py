#!/usr/bin/env python3
"""fsync rate of the disk under a folder: write 4 KiB + fsync in a loop for
2 s, appending (the file grows, as SQLite's WAL does) and overwriting in
place. Prints "append/s overwrite/s". Used by bench/serve_bench.sh."""
import os, sys, time

def rate(folder, append):
    p = os.path.join(folder, ".fsync-probe")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if not append:
            os.write(fd, b"\0" * (1 << 20))
            os.fsync(fd)
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 2:
            if append:
                os.write(fd, b"x" * 4096)
            else:
                os.pwrite(fd, b"x" * 4096, (n % 256) * 4096)
            os.fsync(fd)
            n += 1
        return n / (time.monotonic() - t0)
    finally:
        os.close(fd)
        os.unlink(p)

folder = sys.argv[1] if len(sys.argv) > 1 else "."
print("%.0f %.0f" % (rate(folder, True), rate(folder, False)))
