"""Which webhook URLs the service will call, and how they appear in logs.

A webhook is a request the server makes on a client's behalf, so by default it goes only
to public addresses: private, loopback, link-local, multicast and reserved ones are refused
(`GRAPHWRIGHT_WEBHOOK_ALLOW` lists the networks or host names to allow anyway, e.g.
`127.0.0.0/8` for a local test receiver). The URL is checked when the run is accepted
and again, resolved, just before the call, which then goes to the address checked (a second
DNS answer cannot point it elsewhere). Logs show only its scheme, host and port: the
path and query often carry a secret.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from graphwright.server.errors import UnprocessableError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048


def redacted(url: str) -> str:
    """`https://host:port/…`: what a log may say about a webhook URL."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid webhook URL>"
    return f"{parts.scheme}://{parts.hostname or ''}{port}/…"


def _allowed(address: IpAddress, host: str, allow: str) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    for entry in (e.strip() for e in allow.split(",")):
        if not entry:
            continue
        if entry.lower() == host.lower():
            return True
        try:
            if address in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name entry, compared above
    return address.is_global and not address.is_multicast


def _addresses(host: str, port: int) -> list[IpAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnprocessableError(f"webhook host {host!r} does not resolve") from exc
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]


def admit(url: str, allow: str) -> list[IpAddress]:
    """The addresses an http(s) `url`'s host resolves to, all covered by the allow-list.

    Raise `UnprocessableError` (422) unless every address is one the allow-list (or the public
    internet) covers.
    """
    if len(url) > MAX_URL_LENGTH:
        raise UnprocessableError(f"webhook URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnprocessableError(f"webhook URL {redacted(url)} is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnprocessableError("a webhook must be an http or https URL with a host")
    host = parts.hostname
    addresses = _addresses(host, port)
    refused = [a for a in addresses if not _allowed(a, host, allow)]
    if refused:
        raise UnprocessableError(
            f"webhook {redacted(url)} resolves to {refused[0]}, a private, loopback or "
            "link-local address; list it in GRAPHWRIGHT_WEBHOOK_ALLOW to allow it"
        )
    return addresses


def pinned(url: str, address: IpAddress) -> tuple[str, dict[str, str], dict[str, str]]:
    """The request that reaches `address`, the one admitted, and nothing else DNS points to.

    Nothing a second DNS answer points to (rebinding): the URL with the address for its host, and
    the host kept in the `Host` header and for TLS (SNI and the certificate check).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    literal = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    netloc = literal + (f":{parts.port}" if parts.port else "")
    if "@" in parts.netloc:
        netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
    port = f":{parts.port}" if parts.port else ""
    return (
        parts._replace(netloc=netloc).geturl(),
        {"Host": f"{host}{port}"},
        {"sni_hostname": host},
    )
