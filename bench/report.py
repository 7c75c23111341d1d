"""Turn the results left by bench/run in $BENCH_WORK into a Markdown report.

Reads cN.manifest (role<TAB>display, in display order), cN.r*.json (hyperfine
exports, one per round; the runs of all rounds are pooled per role), cN.skip /
cN.fail (a reason), rss.* (peak RSS in KiB from /usr/bin/time -f %M) and
strace.*.log (strace -f -o).  Prints the report on stdout.
"""
import collections
import glob
import json
import os
import re
import statistics
import sys

W = os.environ["BENCH_WORK"]
BIG = int(os.environ.get("BENCH_BIG_MIB", "1024"))
BIG_NAME = "1 GiB" if BIG == 1024 else "%d MiB" % BIG

# case: (title, reference role)
CASES = [
    ("1", "4 KiB durable replace, " + os.environ.get("BENCH_FS", "").split(" ")[0], "floor"),
    ("2", "4 KiB --no-sync", "floor-nosync"),
    ("3", BIG_NAME + " from a pipe", "cat"),
    ("4", BIG_NAME + " file to file, XFS", "cp-never"),
    ("5", "start-up", "true"),
]
RSS_LIMIT_KIB = 2048


def fmt_time(s):
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return "%.3f ms" % (s * 1e3)
    return "%.1f µs" % (s * 1e6)


def fmt_ratio(r):
    if r < 0.1:
        return "%.4f×" % r
    return ("%.3f×" if r < 10 else "%.1f×") % r


def cell(text):
    """Markdown table cell: a | would end the cell, even inside `code`."""
    return text.replace("|", "\\|")


def fmt_kib(k):
    return "%.2f MiB" % (k / 1024)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def load(case):
    """-> (manifest [(role, display)], {role: [times]}, [{role: median}]
    per round) or None."""
    man = read(os.path.join(W, "c%s.manifest" % case))
    if not man:
        return None
    manifest = [tuple(line.split("\t", 1)) for line in man.splitlines()]
    times = collections.defaultdict(list)
    rounds = []
    for path in sorted(glob.glob(os.path.join(W, "c%s.r*.json" % case))):
        with open(path) as f:
            results = json.load(f)["results"]
        for res in results:
            times[res["command"]].extend(res["times"])
        rounds.append({res["command"]: res["median"] for res in results})
    return manifest, times, rounds


def quartiles(xs):
    if len(xs) < 4:
        return min(xs), max(xs)
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def targets(case, role, med, rss, rounds):
    """-> list of (text, met, noisy) for this row; noisy: the limit lies
    within the middle half of the ratio taken round by round."""
    out = []
    spread = []

    def ratio(a, b):
        rr = sorted(r[a] / r[b] for r in rounds if r.get(a) and r.get(b))
        del spread[:]
        if len(rr) >= 4:
            q = statistics.quantiles(rr, n=4)
            spread.extend((q[0], q[2]))
        return med[a] / med[b] if a in med and b in med and med[b] > 0 else None

    def add(text, value, limit, met):
        if value is None:
            return
        detail = "is " + fmt_ratio(value)
        noisy = False
        if spread:
            detail += ", rounds %s–%s" % (fmt_ratio(spread[0]), fmt_ratio(spread[1]))
            noisy = spread[0] <= limit <= spread[1]
        out.append(("%s (%s)" % (text, detail), met, noisy))

    def le(text, value, limit):
        add(text, value, limit, value is not None and value <= limit)

    def ge(text, value, limit):
        add(text, value, limit, value is not None and value >= limit)

    if case == "1" and role == "ponywrite":
        le("≤ 1.05× floor", ratio("ponywrite", "floor"), 1.05)
    elif case == "1" and role in ("shell", "python"):
        ge("≥ 2× ponywrite", ratio(role, "ponywrite"), 2.0)
    elif case == "2" and role == "ponywrite-nosync":
        le("≤ 1.05× floor --no-sync", ratio("ponywrite-nosync", "floor-nosync"), 1.05)
        r = ratio("ponywrite-nosync", "ponywrite")
        add("< ponywrite durable", r, 1.0, r is not None and r < 1.0)
    elif case == "3" and role == "ponywrite":
        le("≤ 1.0× cat+sync", ratio("ponywrite", "cat"), 1.0)
        if "pony" in rss:
            out.append(("peak RSS ≤ 2 MiB (is %s)" % fmt_kib(rss["pony"]),
                        rss["pony"] <= RSS_LIMIT_KIB, False))
        else:
            out.append(("peak RSS ≤ 2 MiB (not measured)", False, False))
    elif case == "4" and role == "ponywrite":
        le("≤ 0.1× cp --reflink=never", ratio("ponywrite", "cp-never"), 0.1)
    elif case == "5" and role == "ponywrite":
        le("≤ 1.2× /bin/true", ratio("ponywrite", "true"), 1.2)
    return out


def timing_table(lines):
    rss = {}
    for m in ("pony", "cat"):
        v = read(os.path.join(W, "rss." + m))
        if v and v.splitlines()[-1].isdigit():
            rss[m] = int(v.splitlines()[-1])
    lines.append("| case | command | median | p25–p75 | runs | ratio vs ref | peak RSS | target | result |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    all_met = []
    for case, title, ref in CASES:
        label = "%s. %s" % (case, title)
        why = read(os.path.join(W, "c%s.skip" % case)) or read(os.path.join(W, "c%s.fail" % case))
        data = load(case)
        if data is None or why:
            lines.append("| %s | %s | | | | | | | |" % (label, cell(why or "not run")))
            if data is None:
                continue
        manifest, times, rounds = data
        med = {r: statistics.median(t) for r, t in times.items() if t}
        for role, display in manifest:
            t = times.get(role)
            if not t:
                lines.append("| %s | `%s` | no data | | | | | | |" % (label, cell(display)))
                continue
            lo, hi = quartiles(t)
            r = med[role] / med[ref] if ref in med else None
            rs = ""
            if case == "3":
                key = {"ponywrite": "pony", "cat": "cat"}.get(role)
                rs = fmt_kib(rss[key]) if key in rss else "?"
            tg = targets(case, role, med, rss, rounds)
            tgt = "; ".join("%s: %s%s" % (text, "met" if ok else "**not met**",
                                          " (within noise)" if noisy else "")
                            for text, ok, noisy in tg)
            res = "" if not tg else ("met" if all(ok for _, ok, _ in tg) else "**not met**")
            if any(noisy for _, _, noisy in tg):
                res += " (within noise)"
            all_met.extend(ok for _, ok, _ in tg)
            ref_mark = " (ref)" if role == ref else ""
            lines.append("| %s | `%s`%s | %s | %s–%s | %d | %s | %s | %s | %s |" % (
                label, cell(display), ref_mark, fmt_time(med[role]), fmt_time(lo), fmt_time(hi),
                len(t), fmt_ratio(r) if r is not None else "", rs, tgt, res))
    return all_met


SYSCALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()")


def syscalls(path):
    """-> Counter of system calls made after the first execve, or None."""
    text = read(path)
    if text is None:
        return None
    c = collections.Counter()
    seen_exec = False
    for line in text.splitlines():
        m = SYSCALL.match(line)
        if not m or m.group(2):  # not a syscall line, or the 2nd half of one
            continue
        name = m.group(3)
        if not seen_exec:
            seen_exec = name == "execve"
            continue
        c[name] += 1
    return c if seen_exec else None


FLUSH = {"fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "msync"}
RENAME = {"rename", "renameat", "renameat2"}


def syscall_section(lines):
    lines.append("")
    lines.append("System calls after execve of one 4 KiB replace (`strace -f`; the dynamic")
    lines.append("loader's calls are included and are the same for both binaries):")
    lines.append("")
    for mode, suffix in (("default", ""), ("--no-sync", "-nosync")):
        p = syscalls(os.path.join(W, "strace.pony%s.log" % suffix))
        f = syscalls(os.path.join(W, "strace.floor%s.log" % suffix))
        if p is None or f is None:
            lines.append("- %s: strace failed or not run" % mode)
            continue
        pf = sum(v for k, v in p.items() if k in FLUSH)
        ff = sum(v for k, v in f.items() if k in FLUSH)
        pr = sum(v for k, v in p.items() if k in RENAME)
        fr = sum(v for k, v in f.items() if k in RENAME)
        extra = p - f
        fewer = f - p
        lines.append("- %s: ponywrite **%d** syscalls (%d flushes, %d renames), floor **%d** (%d flushes, %d renames)."
                     % (mode, sum(p.values()), pf, pr, sum(f.values()), ff, fr))
        if extra:
            lines.append("  ponywrite's extra calls: " + ", ".join(
                "%s×%d" % (k, v) for k, v in sorted(extra.items())))
        if fewer:
            lines.append("  calls only the floor makes: " + ", ".join(
                "%s×%d" % (k, v) for k, v in sorted(fewer.items())))
        if mode == "default":
            names = sorted(set(p) | set(f))
            lines.append("")
            lines.append("  | syscall | ponywrite | floor |")
            lines.append("  | --- | ---: | ---: |")
            for k in names:
                mark = "" if p[k] == f[k] else " ←"
                lines.append("  | %s | %d | %d%s |" % (k, p[k], f[k], mark))
            lines.append("")
    # How the XFS case copied.
    for name, what in (("xfs-pony", "ponywrite -i src dst"), ("xfs-cp-never", "cp --reflink=never")):
        c = syscalls(os.path.join(W, "strace.%s.log" % name))
        if c is None:
            continue
        keys = ("copy_file_range", "ioctl", "read", "write", "splice", "sendfile", "mmap")
        lines.append("- XFS, `%s`: " % what + ", ".join("%s×%d" % (k, c[k]) for k in keys if c[k]))


def main():
    env = os.environ.get
    lines = []
    lines.append("## ponywrite benchmark")
    lines.append("")
    lines.append("- date: %s" % env("BENCH_DATE", "?"))
    lines.append("- kernel: %s" % env("BENCH_KERNEL", "?"))
    lines.append("- file system (cases 1–3): %s" % env("BENCH_FS", "?"))
    lines.append("- file system (case 4): %s" % (env("BENCH_XFS") or "not run"))
    lines.append("- binary: %s; %s; %s CPUs" % (env("BENCH_VERSION", "?"), env("BENCH_HYPERFINE", "?"), env("BENCH_CPUS", "?")))
    lines.append("- load average: %s" % env("BENCH_LOAD", "?"))
    try:
        if float(env("BENCH_LOAD", "0").split()[0]) > 0.5:
            lines.append("- **the machine was busy at the start: expect noisy small-case times**")
    except ValueError:
        pass
    if env("BENCH_QUICK") == "1":
        lines.append("- **BENCH_QUICK=1: few runs, not a result**")
    lines.append("")
    met = timing_table(lines)
    lines.append("")
    lines.append("Medians over all runs; each case pools several hyperfine rounds with the")
    lines.append("command order rotated. Ratios are against the case's reference (ref);")
    lines.append("\"rounds a–b×\" is the middle half of the same ratio taken round by round;")
    lines.append("\"within noise\": the target's limit lies inside that range.")
    lines.append("Targets: %d of %d met." % (sum(met), len(met)))
    checks = read(os.path.join(W, "check"))
    if checks:
        lines.append("")
        lines.append("Output checks: " + "; ".join(checks.splitlines()) + ".")
    syscall_section(lines)
    lines.append("")
    c6 = read(os.path.join(W, "c6.md"))
    why = read(os.path.join(W, "c6.skip")) or read(os.path.join(W, "c6.fail"))
    lines.append(c6 if c6 else "### Case 6 (large input, dirty memory): " + (why or "not run"))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
