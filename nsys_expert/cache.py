"""A private folder for what nsys-expert derives and keeps between runs (validated rule packs as JSON,
compiled report templates).

``$TMPDIR/nsys-expert-cache-<uid>``, made with mode 0700. Every folder on the way down from it is
checked before use (``os.lstat``, not following links): a real directory, not a symlink, owned by this
user, writable by nobody else. A folder that fails (another user pre-created it, it is a link, a
subfolder was opened to others) is not used: the run goes on without a cache, with one warning on
stderr. Files read back are checked the same way (``private_file``). ``NSX_NO_CACHE=1`` turns the
cache off. What the rule-pack cache holds is plain JSON, never a pickle: even a planted file can only
be data, and it is validated before use.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile

_warned = False


def _warn(path: str, why: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        print(f"nsys-expert: warning: not using the cache folder {path}: {why} (running without a cache; remove "
              "it or set NSX_NO_CACHE=1)", file=sys.stderr)


def _private(path: str, uid: int | None, is_dir: bool = True) -> str | None:
    """Why ``path`` is not this user's own (a link, not a directory/file, another owner, writable by
    others), or None when it is."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if is_dir and not stat.S_ISDIR(st.st_mode) or not is_dir and not stat.S_ISREG(st.st_mode):
        return "it is not a " + ("directory" if is_dir else "regular file")
    if uid is not None and st.st_uid != uid:
        return f"it belongs to user id {st.st_uid}, not to you ({uid})"
    if st.st_mode & 0o022:
        return f"others can write into it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def folder(*sub: str) -> str | None:
    """The cache folder (``sub``: subfolders), made if needed; None when there is none to use."""
    if os.environ.get("NSX_NO_CACHE"):
        return None
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = os.path.join(tempfile.gettempdir(), "nsys-expert-cache" + (f"-{uid}" if uid is not None else ""))
    try:
        for part in ("",) + sub:
            path = os.path.join(path, part) if part else path
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            why = _private(path, uid)
            if why:
                _warn(path, why)
                return None
        return path if os.access(path, os.W_OK) else None
    except OSError:
        return None


def private_file(path: str) -> bool:
    """Whether a cache file may be read: a regular file (not a link) of this user that nobody else can write."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        return _private(path, uid, is_dir=False) is None
    except OSError:
        return False


def content_id(path: str, piece: int = 1 << 20) -> str:
    """The identity of a file's content for cache keys: its size and a SHA-256 of its first and last
    ``piece`` bytes. An mtime alone is not one: a report replaced by an older copy (``cp -p``, an
    unpacked archive) keeps an mtime older than the cached export."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        h.update(str(size).encode() + b"\0")
        h.update(fh.read(piece))
        if size > piece:
            fh.seek(max(piece, size - piece))
            h.update(fh.read(piece))
    return f"{size}-{h.hexdigest()[:24]}"


# ----------------------------------------------------------------------- compiled templates (Jinja2)
# Jinja2's own file cache reads an entry with pickle and marshal: a file planted in the folder would be
# run (or, short of that, crash the report with an internal KeyError). Every entry here carries an
# HMAC-SHA256 of its bytes under a random key kept in the cache folder (mode 0600); an entry that is not
# this user's private file, or whose tag does not verify, is never parsed: it is compiled again.
_TAG = 32


def _key(folder_path: str) -> bytes | None:
    path = os.path.join(folder_path, "key")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
    except FileExistsError:
        pass
    except OSError:
        return None
    if not private_file(path):
        return None
    try:
        with open(path, "rb") as fh:
            key = fh.read(64)
    except OSError:
        return None
    return key if len(key) == 32 else None


def bytecode_cache(*sub: str):
    """A Jinja2 bytecode cache in ``folder(*sub)`` whose entries are verified before use; None without
    a cache folder."""
    import hashlib
    import hmac
    import io

    import jinja2

    path = folder(*sub)
    key = _key(path) if path else None
    if key is None:
        return None

    class Signed(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            name = self._get_cache_filename(bucket)
            if not os.path.exists(name) or not private_file(name):
                return
            try:
                with open(name, "rb") as fh:
                    blob = fh.read(16 << 20)
            except OSError:
                return
            tag, payload = blob[:_TAG], blob[_TAG:]
            if len(blob) <= _TAG or not hmac.compare_digest(tag, hmac.new(key, payload, hashlib.sha256).digest()):
                return                       # not ours: compiled again (and overwritten)
            try:
                bucket.load_bytecode(io.BytesIO(payload))
            except Exception:                # noqa: BLE001 - a damaged entry only costs a compile
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            buf = io.BytesIO()
            bucket.write_bytecode(buf)
            payload = buf.getvalue()
            name = self._get_cache_filename(bucket)
            tmp = f"{name}.{os.getpid()}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(hmac.new(key, payload, hashlib.sha256).digest() + payload)
                os.replace(tmp, name)
            except OSError:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    return Signed(path)
