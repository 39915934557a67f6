"""Debian's headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
no port, no extra package), and a PNG reader (stdlib only): the harness of the HTML report's browser tests."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

# ------------------------------------------------------------------------------ headless Chromium
def chromium_path() -> str | None:
    for c in (os.environ.get("NSX_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


class Chromium:
    """A minimal DevTools client over --remote-debugging-pipe (fd 3: commands in, fd 4: replies out,
    each message JSON ended by a NUL byte)."""

    FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--hide-scrollbars", "--mute-audio", "--force-device-scale-factor=1",
             "--remote-debugging-pipe", "about:blank"]

    def __init__(self, exe: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="nsx-chromium-")
        to_r, self.w = os.pipe()
        self.r, from_w = os.pipe()
        # park the child's ends above fd 10 so that moving them to 3 and 4 cannot clobber each other
        a, b = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)

        def child_fds():
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([exe, f"--user-data-dir={self.profile}", *self.FLAGS], preexec_fn=child_fds,
                                     pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        os.close(a)
        os.close(b)
        self.buf, self.next_id, self.events = b"", 0, []

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("headless Chromium did not answer in time")
            if select.select([self.r], [], [], left)[0]:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                    raise RuntimeError(f"Chromium closed the DevTools pipe: {err[-2000:]}")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        mid = self.next_id
        m = {"id": mid, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._read(deadline)
            if r.get("id") == mid:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, method: str, session: str) -> dict:
        for i, e in enumerate(self.events):
            if e.get("method") == method and e.get("sessionId") == session:
                return self.events.pop(i)
        deadline = time.monotonic() + self.timeout
        while True:
            e = self._read(deadline)
            if e.get("method") == method and e.get("sessionId") == session:
                return e
            self.events.append(e)

    def open(self, path, width: int = 1200, height: int = 900) -> "Page":
        t = self.send("Target.createTarget", {"url": "about:blank"})
        sid = self.send("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(m, session=sid)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=sid)
        self.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=sid)
        self.wait_event("Page.loadEventFired", sid)
        return Page(self, sid, t["targetId"])

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Chromium, sid: str, target: str):
        self.b, self.sid, self.target = browser, sid, target

    def eval(self, expr: str):
        r = self.b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=self.sid)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations, failed loads)."""
        out = []
        for e in self.b.events:
            if e.get("sessionId") != self.sid:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def screenshot(self, scale: float = 1.0, height: float | None = None) -> bytes:
        """The page as PNG, from the top (``height``: only that much; ``scale`` < 1: a small copy)."""
        size = self.b.send("Page.getLayoutMetrics", session=self.sid)["cssContentSize"]
        shot = self.b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
            "x": 0, "y": 0, "width": size["width"], "height": min(height or size["height"], size["height"]),
            "scale": scale}}, session=self.sid)
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        self.b.send("Target.closeTarget", {"targetId": self.target})


def png_size_and_ink(data: bytes) -> tuple[int, int, float]:
    """Width, height and the share of non-white pixels of an 8-bit RGB(A) PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    w = h = ctype = 0
    while pos < len(data):
        ln, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + ln]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8
        elif typ == b"IDAT":
            idat += body
        pos += 12 + ln
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    ink = total = 0
    for y in range(0, h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):   # undo the PNG row filter
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        prev = line
        if True:
            for x in range(w):
                px = line[x * bpp:x * bpp + 3]
                total += 1
                ink += 1 if min(px) < 200 else 0
    return w, h, ink / max(1, total)
