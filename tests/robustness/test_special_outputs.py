"""``-o`` writes only regular files (issue 50, item 2): a FIFO, a socket, a character device (made in
tmp_path, never /dev's own), or a symlink to one, is refused with one line and exit 2, and stays what
it was; ``command --out-dir`` refuses a FIFO where a wrapper goes instead of blocking on it."""
from __future__ import annotations

import os
import socket
import stat
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_outputs_hostile import csv_case, one_error_line, run  # noqa: E402, F401


def _fifo(p):
    os.mkfifo(p)
    return stat.S_ISFIFO


def _socket(p):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return stat.S_ISSOCK


def _chardev(p):
    try:
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))   # a null device of our own
    except (PermissionError, OSError):
        pytest.skip("mknod needs root")
    return stat.S_ISCHR


MAKERS = {"fifo": _fifo, "socket": _socket, "chardev": _chardev}


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_command_o_special(tmp_path, kind, link):
    node = tmp_path / f"node_{kind}"
    is_kind = MAKERS[kind](node)
    target = node
    if link:
        target = tmp_path / "link.sh"
        target.symlink_to(node)
    r = run("command", "quick", "-o", target, "--", "python", "train.py")
    one_error_line(r, str(target), "not a regular file")
    assert is_kind(os.lstat(node).st_mode)
    assert not link or os.path.islink(target)


def test_diagnose_o_fifo_and_folder(tmp_path, csv_case):  # noqa: F811
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    r = run("diagnose", csv_case, "-o", fifo, "--force")
    one_error_line(r, "FIFO", "regular")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    r = run("diagnose", csv_case, "-o", tmp_path)
    one_error_line(r, "directory")   # click says it first


def test_regular_file_still_written(tmp_path):
    out = tmp_path / "plan.sh"
    r = run("command", "quick", "-o", out, "--", "python", "train.py")
    assert r.returncode == 0 and "nsys profile" in out.read_text()


def test_out_dir_fifo_wrapper(tmp_path):
    d = tmp_path / "w"
    d.mkdir()
    os.mkfifo(d / "run_nsys.py")
    r = run("command", "torchrun", "--out-dir", d, "--", "python", "train.py")
    one_error_line(r, "run_nsys.py", "FIFO")
