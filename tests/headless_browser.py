"""Headless Chromium driven through the DevTools protocol over a pipe (no extra package).

``--remote-debugging-pipe`` makes Chromium read protocol commands from its file
descriptor 3 and write replies and events to 4, each message JSON ended by a NUL byte.
:class:`Browser` opens a page, evaluates JavaScript in it, collects console errors
and uncaught exceptions, and takes screenshots.  WebGL runs on SwiftShader (software).
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    FLAGS = ("--headless", "--remote-debugging-pipe", "--no-sandbox", "--no-first-run", "--mute-audio",
             "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
             "--disable-background-networking", "--disable-extensions", "--hide-scrollbars")

    def __init__(self, width: int = 1280, height: int = 800, timeout: float = 60.0):
        self.width, self.height, self.timeout = width, height, timeout
        self.errors, self.next_id, self.buffer = [], 0, b""

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="asetransfer-chromium-")
        to_child, self.send_fd = os.pipe()
        self.recv_fd, from_child = os.pipe()

        def pipes():  # in the child: the protocol's descriptors 3 (commands in) and 4 (replies out)
            commands, replies = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child))
            os.dup2(commands, 3)  # inheritable: kept across exec
            os.dup2(replies, 4)

        self.process = subprocess.Popen([chromium(), *self.FLAGS, f"--user-data-dir={self.profile}",
                                         f"--window-size={self.width},{self.height}", "about:blank"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, preexec_fn=pipes, close_fds=False)
        os.close(to_child)
        os.close(from_child)
        target = self.command("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.command("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.command(f"{domain}.enable", session=True)
        self.command("Emulation.setDeviceMetricsOverride", session=True, width=self.width, height=self.height,
                     deviceScaleFactor=1, mobile=False)
        return self

    def __exit__(self, *exc):
        try:
            self.command("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.send_fd)
        os.close(self.recv_fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise BrowserError("no reply from Chromium in time")
            chunk = os.read(self.recv_fd, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def _event(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", ""))

    def command(self, method: str, session: bool = False, **params) -> dict:
        """Send one protocol command and return its result (events on the way are collected)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.send_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def open(self, path) -> None:
        self.command("Page.navigate", session=True, url="file://" + os.path.abspath(os.fspath(path)))

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (a promise is awaited); raises on an exception."""
        result = self.command("Runtime.evaluate", session=True, expression=expression, awaitPromise=True,
                              returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(result["exceptionDetails"].get("exception", {}).get("description")
                               or result["exceptionDetails"].get("text"))
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0, every: float = 0.1):
        """Poll ``expression`` until it is truthy; returns its value, raises BrowserError on time out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(every)
        raise BrowserError(f"timed out waiting for {expression}; errors: {self.errors}")

    def screenshot(self) -> bytes:
        """The page as PNG bytes."""
        return base64.b64decode(self.command("Page.captureScreenshot", session=True, format="png")["data"])
