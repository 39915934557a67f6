"""Which paths can be read at all: every input is a regular, readable file (or a folder of them).

A symbolic link loop, a dangling link, a FIFO or socket (reading one would block forever), a device
and an unreadable file or folder are the user's to fix: each is one ``InputError`` naming the path,
raised before anything is opened (never an internal error, never a hang).
"""
from __future__ import annotations

import errno
import os
import stat

from ..errors import InputError
from . import compressed


def check_path(path: str) -> os.stat_result:
    """The stat of ``path`` (following links), or an InputError that says what is wrong with it."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError("a loop of symbolic links (the link points back to itself)", path,
                             "point it at the real file or remove it") from None
        if e.errno == errno.ENOENT and os.path.islink(path):
            raise InputError(f"a dangling symbolic link (it points to {os.readlink(path)}, which does not exist)",
                             path, "point it at the real file or remove it") from None
        if e.errno == errno.ENOENT:
            raise InputError("no such file or folder", path) from None
        if e.errno == errno.EACCES:
            raise InputError("permission denied (cannot look at it)", path, "make it readable") from None
        raise InputError(f"cannot read it ({e.strerror})", path) from None
    if stat.S_ISDIR(st.st_mode):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError("permission denied (cannot list this folder)", path, "make it readable") from None
        return st
    if not stat.S_ISREG(st.st_mode):
        what = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise InputError(f"{what}, not a file: it is not read (reading it could wait forever)", path,
                         "pass a folder of nsys reports or the report files themselves")
    if not os.access(path, os.R_OK):
        raise InputError("permission denied (this file cannot be read)", path, "make it readable") from None
    return st


def list_folder(path: str) -> list[str]:
    """The names in a folder, sorted (an unreadable folder is the user's error)."""
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        raise InputError(f"cannot list this folder ({e.strerror})", path) from None


_MAGIC = {b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image", b"%PDF": "a PDF document",
          b"PK\x03\x04": "a zip archive", b"\x7fELF": "a program (ELF)"}


def file_kind(path: str) -> str:
    """What a file that holds no profile is, in a few words (from its first bytes)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return "an unreadable file"
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    if not head:
        return "an empty file"
    if b"\0" in head:
        return "a binary file"
    return "a text file without nsys stats tables"


# what a tool prints instead of its tables when the run failed (the file holds no profile)
_FAILED_RUN = (("usage: nsys stats", "nsys stats's usage message"), ("==ERROR== ERR_NVGPUCTRPERM", "ncu's permission error"),
               ("==ERROR==", "an ncu error"))


def _failed_run_text(path: str) -> str | None:
    """Why a lone text file holds no profile: the usage message or error a failed tool run printed."""
    if os.path.getsize(path) > 1 << 20:
        return None
    try:
        text = compressed.head(path, 1 << 20).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the generic refusal below still names the file
        return None
    for marker, what in _FAILED_RUN:
        if marker in text:
            first = next((ln.strip() for ln in text.splitlines() if ln.strip().startswith(("WARNING", "==ERROR==", "ERROR"))), "")
            return f"this file holds {what}, not a profile: the run that wrote it failed" + (f" ({first[:160]})" if first else "")
    return None


def not_a_profile(path: str) -> tuple[str, str]:
    """(message, what to do) for one regular file that holds no profile: a failed tool run's saved text
    (nsys stats's usage message, an ncu error), else what the file is."""
    failed = _failed_run_text(path)
    if failed:
        return failed, "run the nsys stats (or ncu) command again and save what it prints when it succeeds"
    return (f"is {file_kind(path)}, not a profile nsys-expert reads",
            "give a folder of nsys stats CSVs, an nsys export .sqlite, a .nsys-rep, a torch.profiler trace "
            "(.pt.trace.json) or a log with nsys stats tables; nsys-expert command stats prints the commands")


def list_files(paths: list[str]) -> tuple[list[str], list[str]]:
    """Files of the given folders (one level), plus the files of an ``ncu`` subfolder. Every entry
    is checked first (``files.check_path``): a link loop, a dangling link, a FIFO or an unreadable
    file is an InputError naming it, not a crash or a hang."""
    files, skipped_dirs = [], []
    for p in paths:
        if stat.S_ISDIR(check_path(p).st_mode):
            for name in list_folder(p):
                full = os.path.join(p, name)
                if name.startswith(".") and not os.path.isdir(full):
                    continue
                if os.path.isdir(full):
                    if name.lower() in ("ncu", "nsight-compute", "ncu-rep", "ncu_csv"):
                        check_path(full)
                        for f in list_folder(full):
                            if not f.startswith("."):
                                sub = os.path.join(full, f)
                                if not os.path.isdir(sub):
                                    check_path(sub)
                                    files.append(sub)
                    else:
                        skipped_dirs.append(full)
                else:
                    check_path(full)
                    files.append(full)
        else:
            files.append(p)
    return files, skipped_dirs


def stamp(path: str) -> tuple | None:
    """What tells a file's content changed: its size, modification time and inode (None: gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def changed(path: str) -> InputError:
    """The one line for a file rewritten (or removed) while it was read: what was read is neither version."""
    return InputError("the file changed while it was read (its size, time stamp or inode moved): what was read "
                      "is part old, part new; not used", path,
                      "diagnose it again once whatever writes it has finished, or diagnose a copy")
