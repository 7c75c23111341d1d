"""Case 6 of bench/run: large input against the page cache and other writers.

    writeback.py OUT.md RUNS BYTES PONYWRITE FLOOR SOURCE

Replaces BYTES from a pipe (head -c BYTES /dev/zero) and from SOURCE, a file
on another file system, with ponywrite, the C floor and `cat > f && sync f`,
in the current directory, RUNS rounds with the order rotated.  For each run:
the wall time; the peak of Dirty + Writeback in /proc/meminfo, sampled every
50 ms; the new file's pages left in the page cache after exit (fincore); and
the latency of every 4 KiB pwrite + fdatasync that another writer (a thread
here, on a file of the same directory, one every 20 ms) made meanwhile.
Writes a Markdown section to OUT.md.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

OUT, RUNS, BYTES, P, FLOOR, SOURCE = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:7]
MIB = BYTES // (1024 * 1024)
PIPE = "head -c %d /dev/zero | " % BYTES
CASES = [
    ("pipe", [
        ("ponywrite", PIPE + P + " f.pony", "f.pony"),
        ("floor", PIPE + FLOOR + " f.floor", "f.floor"),
        ("cat", PIPE + "cat > f.cat && sync f.cat", "f.cat"),
    ]),
    ("file on another file system", [
        ("ponywrite", "%s -i %s f.pony" % (P, SOURCE), "f.pony"),
        ("floor", "%s f.floor < %s" % (FLOOR, SOURCE), "f.floor"),
        ("cat", "cat %s > f.cat && sync f.cat" % SOURCE, "f.cat"),
    ]),
]
DISPLAY = {
    "ponywrite": "ponywrite f",
    "floor": "floor f (C floor: write, fdatasync, rename, fsync dir)",
    "cat": "cat > f && sync f",
}


def dirty_kib():
    n = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(("Dirty:", "Writeback:")):
                n += int(line.split()[1])
    return n


def cached_bytes(path):
    r = subprocess.run(["fincore", "-b", "-n", "-o", "RES", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return int(r.stdout.split()[0]) if r.returncode == 0 and r.stdout.split() else None


def measure(cmd, path):
    """(seconds, peak dirty KiB, cached bytes after exit, [latencies])"""
    for f in ("f.pony", "f.floor", "f.cat"):
        if os.path.exists(f):
            os.unlink(f)
    subprocess.run(["sync"], check=True)
    stop = threading.Event()
    peak = [dirty_kib()]
    lat = []

    def sample():
        while not stop.wait(0.05):
            peak[0] = max(peak[0], dirty_kib())

    def other_writer():
        fd = os.open("other.dat", os.O_WRONLY | os.O_CREAT, 0o644)
        block = b"x" * 4096
        while not stop.wait(0.02):
            t = time.monotonic()
            os.pwrite(fd, block, 0)
            os.fdatasync(fd)
            lat.append(time.monotonic() - t)
        os.close(fd)

    threads = [threading.Thread(target=sample), threading.Thread(target=other_writer)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    rc = subprocess.run(["sh", "-c", cmd]).returncode
    secs = time.monotonic() - t0
    stop.set()
    for t in threads:
        t.join()
    if rc != 0 or os.path.getsize(path) != BYTES:
        raise SystemExit("writeback.py: %s: exit %d or wrong size" % (cmd, rc))
    return secs, peak[0], cached_bytes(path), lat


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))] if xs else float("nan")


def main():
    lines = ["### %d MiB: time, dirty memory, page cache, another writer's latency" % MIB, ""]
    lines.append("Medians of %d run(s) per command, order rotated. Dirty = peak of Dirty + Writeback" % RUNS)
    lines.append("(/proc/meminfo, every 50 ms). Cached = the new file's pages in the page cache after exit")
    lines.append("(fincore). Other writer: 4 KiB pwrite + fdatasync every 20 ms on the same file system during")
    lines.append("the run; p50/p99/max over all its calls. Source of the file case: %s." % SOURCE)
    lines.append("")
    lines.append("| input | command | time | × floor | × cat | dirty peak | cached after | other writer p50 / p99 / max |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, cmds in CASES:
        res = {name: [] for name, _, _ in cmds}
        for r in range(RUNS):
            k = r % len(cmds)
            for name, cmd, path in cmds[k:] + cmds[:k]:
                res[name].append(measure(cmd, path))
        med = {n: statistics.median(x[0] for x in v) for n, v in res.items()}
        for name, _, _ in cmds:
            v = res[name]
            lat = [x for run in v for x in run[3]]
            cached = [x[2] for x in v if x[2] is not None]
            lines.append("| %s | %s | %.2f s | %.3f× | %.3f× | %.0f MiB | %s | %.1f / %.1f / %.1f ms |" % (
                label, DISPLAY[name].replace("|", "\\|"), med[name], med[name] / med["floor"],
                med[name] / med["cat"], statistics.median(x[1] for x in v) / 1024,
                "%.0f MiB" % (statistics.median(cached) / 2**20) if cached else "?",
                statistics.median(lat) * 1e3 if lat else float("nan"), p99(lat) * 1e3,
                max(lat) * 1e3 if lat else float("nan")))
    if os.path.exists("other.dat"):
        os.unlink("other.dat")
    lines.append("")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
