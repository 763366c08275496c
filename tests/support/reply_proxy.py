"""A TCP proxy in front of Redis that loses one reply: the command reaches the server and
runs, then the client's connection is cut before the answer comes back (real sockets).

The client sees a connection error after its write took effect, the one moment a retry
can repeat a write."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from graphwright.testing.redis_servers import free_port


@dataclass
class ReplyProxy:
    """Forwards to `port`; the first request containing each of `drop_after` loses its reply."""

    port: int
    drop_after: list[bytes]
    listen: int = field(default_factory=free_port)
    dropped: list[bytes] = field(default_factory=list)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.listen}/0"

    def _should_drop(self, chunk: bytes) -> bool:
        with self._guard:
            for marker in self.drop_after:
                if marker in chunk and marker not in self.dropped:
                    self.dropped.append(marker)
                    return True
        return False

    def serve(self, server: socket.socket, stop: threading.Event) -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            upstream = socket.create_connection(("127.0.0.1", self.port))
            cut, replied = threading.Event(), threading.Event()
            threading.Thread(
                target=self._pipe, args=(client, upstream, cut, replied), daemon=True
            ).start()
            threading.Thread(
                target=self._back, args=(upstream, client, cut, replied), daemon=True
            ).start()

    def _pipe(
        self,
        client: socket.socket,
        upstream: socket.socket,
        cut: threading.Event,
        replied: threading.Event,
    ) -> None:
        with suppress(OSError):
            while chunk := client.recv(1 << 16):
                if self._should_drop(chunk):
                    cut.set()
                    upstream.sendall(chunk)
                    replied.wait(5)  # the server ran it; its reply went nowhere
                    break
                upstream.sendall(chunk)
        for sock in (client, upstream):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _back(
        self,
        upstream: socket.socket,
        client: socket.socket,
        cut: threading.Event,
        replied: threading.Event,
    ) -> None:
        with suppress(OSError):
            while chunk := upstream.recv(1 << 16):
                if cut.is_set():
                    replied.set()
                    return
                client.sendall(chunk)


@contextmanager
def reply_proxy(port: int, *drop_after: bytes) -> Iterator[ReplyProxy]:
    proxy = ReplyProxy(port=port, drop_after=list(drop_after))
    server = socket.create_server(("127.0.0.1", proxy.listen))
    stop = threading.Event()
    loop = threading.Thread(target=proxy.serve, args=(server, stop), daemon=True)
    loop.start()
    try:
        yield proxy
    finally:
        stop.set()
        loop.join(timeout=5)
        server.close()
