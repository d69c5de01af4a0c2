"""``ingle.serve``: a client's predictors (built-in and your own) over the HTTP API of
``ingle serve``, so the official ``openai`` SDKs, curl or another language can call them."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional, Sequence

from . import _ingle

__all__ = ["Server", "serve", "serve_async", "start_server"]


class Server:
    """A server running in the background: ``url`` is its base URL (``.../v1``); ``stop()``
    ends it. A context manager."""

    def __init__(self, native: _ingle.NativeServer) -> None:
        self._native = native
        host, port = native.address
        self.host, self.port = host, port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/v1"

    def stop(self, timeout: float = 15.0) -> None:
        """Stops taking requests, ends those in flight, and waits (up to ``timeout`` s)."""
        self._native.stop()
        self._native.wait(timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the server ends (forever without ``timeout``); True once it has."""
        while True:
            step = 0.25 if timeout is None else min(0.25, max(timeout, 0.0))
            if self._native.wait(step):
                return True
            if timeout is not None:
                timeout -= step
                if timeout <= 0:
                    return False

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<ingle.Server {self.url}>"


def _native_of(client: Any) -> Any:
    native = getattr(client, "_native", None)
    if native is None or not hasattr(native, "serve"):
        raise TypeError(f"{client!r} is not an ingle.OpenAI or ingle.AsyncOpenAI client")
    return native


def start_server(client: Any, host: str = "127.0.0.1", port: int = 8080,
                 api_key: Optional[str] = None, allowed_hosts: Sequence[str] = (),
                 cors_origins: Sequence[str] = ()) -> Server:
    """Starts serving ``client`` in the background (port 0 picks a free port).

    As ``ingle serve``, the server answers only to loopback host names, IP addresses and this
    machine's name, plus ``allowed_hosts`` (``"*"``: any), which stops DNS rebinding; and it
    refuses requests from web pages of other origins than this machine's own, plus
    ``cors_origins`` (``"https://app.example.com"``, or ``"*"``)."""
    return Server(_native_of(client).serve(host, port, api_key, _names(allowed_hosts, "allowed_hosts"),
                                           _names(cors_origins, "cors_origins")))


def _names(values: Sequence[str], name: str) -> List[str]:
    if isinstance(values, str):
        values = [values]
    values = list(values)
    for value in values:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be strings, got {type(value).__name__}")
    return values


def serve(client: Any, host: str = "127.0.0.1", port: int = 8080,
          api_key: Optional[str] = None, allowed_hosts: Sequence[str] = (),
          cors_origins: Sequence[str] = ()) -> None:
    """Serves ``client`` until Ctrl-C. With ``api_key``, requests need
    ``Authorization: Bearer <api_key>``. ``allowed_hosts`` and ``cors_origins``: see
    ``start_server``."""
    server = start_server(client, host, port, api_key, allowed_hosts, cors_origins)
    print(f"ingle: serving on {server.url}", flush=True)
    try:
        server.wait()
    finally:
        server.stop()


async def serve_async(client: Any, host: str = "127.0.0.1", port: int = 8080,
                      api_key: Optional[str] = None, allowed_hosts: Sequence[str] = (),
                      cors_origins: Sequence[str] = ()) -> None:
    """``serve`` for asyncio: runs until the task is cancelled."""
    server = await asyncio.to_thread(start_server, client, host, port, api_key, allowed_hosts,
                                     cors_origins)
    try:
        while not await asyncio.to_thread(server._native.wait, 0.25):
            pass
    finally:
        await asyncio.to_thread(server.stop)
