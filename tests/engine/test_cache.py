"""The cache folder holds pickles and bytecode that are loaded as code: only a private folder is used."""
from __future__ import annotations

import os
import stat
import tempfile

import pytest

from nsys_expert import cache


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.delenv("NSX_NO_CACHE", raising=False)
    return tmp_path


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership and modes")
def test_private_folder_made_and_used(tmpdir_env):
    got = cache.folder("packs")
    base = tmpdir_env / f"nsys-expert-cache-{os.getuid()}"
    assert got == str(base / "packs")
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o700


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership and modes")
def test_folder_others_can_write_is_not_used(tmpdir_env):
    base = tmpdir_env / f"nsys-expert-cache-{os.getuid()}"
    base.mkdir()
    os.chmod(base, 0o777)
    assert cache.folder("templates") is None
    os.chmod(base, 0o755)   # readable by others is fine, writable is not
    assert cache.folder("templates") == str(base / "templates")


def test_switched_off(tmpdir_env, monkeypatch):
    monkeypatch.setenv("NSX_NO_CACHE", "1")
    assert cache.folder("packs") is None
    assert not list(tmpdir_env.iterdir())


def test_packs_load_without_a_usable_cache(tmpdir_env, monkeypatch):
    from nsys_expert import engine

    monkeypatch.setattr(cache, "folder", lambda *a: None)
    packs = engine.load_packs()
    assert packs and packs[0].rules
