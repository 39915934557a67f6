"""Open a file for reading only when it is a regular file, without blocking on the way.

``open()`` on a FIFO waits for a writer (forever), ``/dev/zero`` never ends and ``/dev/stdin`` reads the
terminal: a settings file, a rule pack or a report named by a user is opened here instead.
``O_NONBLOCK`` makes the open itself return at once for a FIFO; ``fstat`` on the open descriptor
(no race with a rename) then says what it is. Anything but a regular file raises :class:`NotRegular`,
an ``OSError`` whose ``strerror`` says what it is, so the callers' ``except OSError`` one-line errors
name it.
"""
from __future__ import annotations

import errno
import os
import stat

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


class NotRegular(OSError):
    pass


def kind(mode: int) -> str | None:
    """``None`` for a regular file, else what it is (``a FIFO (named pipe)``, ``a character device``, ...)."""
    if stat.S_ISREG(mode):
        return None
    return next((k for test, k in _KINDS if test(mode)), "not a regular file")


def open_regular(path, mode: str = "rb", **kw):
    """``open(path, mode)`` for reading, refused with :class:`NotRegular` unless ``path`` is a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        what = kind(os.fstat(fd).st_mode)
        if what:
            raise NotRegular(errno.EINVAL, f"{what}, not a regular file: not read (it could block or never end)",
                             str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise
