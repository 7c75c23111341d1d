"""Durable file replacement the way a careful Python script does it.

Used by bench/run as the "python" comparison:
    python3 replace.py TARGET < content
tempfile in the target's directory -> write -> os.fdatasync -> os.replace
-> fsync of the directory.
"""
import os
import sys
import tempfile

target = sys.argv[1]
directory = os.path.dirname(os.path.abspath(target))
fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(target) + ".")
try:
    with os.fdopen(fd, "wb") as f:
        f.write(sys.stdin.buffer.read())
        f.flush()
        os.fdatasync(f.fileno())
    os.replace(tmp, target)
except BaseException:
    os.unlink(tmp)
    raise
dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
try:
    os.fsync(dfd)
finally:
    os.close(dfd)
