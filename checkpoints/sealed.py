"""Encryption at rest for every stored payload: one `Sealer` that the stores call.

A sealed value is `MAGIC + key id (8) + nonce (12) + tag (16) + ciphertext` (AES-GCM)
under a key derived from the configured one (HKDF-SHA256), with the Redis key and field
it is stored at as associated data: a value copied to another key or field does not open.
`GWS1` values (the raw key, no associated data) still open, so `graphwright rekey`
can re-seal them. The first key encrypts; every key decrypts, so a new key can be put in
front of the old ones and `rekey` re-encrypts what is stored. With encryption on, a
value that is not sealed is refused; `graphwright seal` seals data written before.

Lookups that must not show plaintext (the thread index's metadata pairs) use a keyed hash,
`tags`: an HMAC under a key derived from each encryption key, the newest first. Writers
use the newest tag; readers look under every tag, so a rotation misses nothing and
`graphwright rekey` re-indexes under the newest key before the old one goes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from Crypto.Cipher import AES
from Crypto.Hash import SHA256
from Crypto.Protocol.KDF import HKDF
from Crypto.Random import get_random_bytes

from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright_errors import ConfigurationError

MAGIC = b"GWS2"  # derived key, bound to its key and field
MAGIC_V1 = b"GWS1"  # raw key, bound to nothing: opens until `rekey` re-seals it
KEYS_ENV = "GRAPHWRIGHT_ENCRYPTION_KEYS"  # comma-separated, newest first
LEGACY_KEY_ENV = "LANGGRAPH_AES_KEY"  # LangGraph's own single key, still honoured
CIPHER_NAME = "gwseal"
# LangGraph's cipher protocol says nothing of where a checkpoint goes: its values are
# bound to this place, so they open as checkpoints only.
CHECKPOINT_PLACE = b"langgraph checkpoint"
_KID, _NONCE, _TAG = 8, 12, 16
_HEADER = len(MAGIC) + _KID + _NONCE + _TAG
Name = str | bytes


def key_id(key: bytes) -> bytes:
    """A short id of a key, stored with each sealed value so rotation knows which key opens it."""
    return hashlib.sha256(b"graphwright-key-id" + key).digest()[:_KID]


def _bytes(name: Name) -> bytes:
    return name.encode() if isinstance(name, str) else name


def place(key: Name, field: Name = b"") -> bytes:
    """The associated data of a value stored at `key` (and hash or stream `field`)."""
    return b"gw-place\x00" + _bytes(key) + b"\x00" + _bytes(field)


def _where(key: Name, field: Name) -> str:
    text = _bytes(key).decode(errors="replace")
    return f"{text!r} field {_bytes(field).decode(errors='replace')!r}" if field else repr(text)


@lru_cache(maxsize=16)
def derive(key: bytes) -> bytes:
    """The AES-256 key of `GWS2` values: HKDF-SHA256 of the configured key."""
    derived: bytes = HKDF(key, 32, b"graphwright", SHA256, context=b"graphwright seal v2")
    return derived


class UnsealedValueError(CorruptCheckpointError):
    """Encryption is on and a value that should be sealed is not (written before it was on)."""


@dataclass(frozen=True)
class Sealer:
    """Seals and opens bytes at a key and field; with no keys it is the identity (off)."""

    keys: tuple[bytes, ...] = ()
    _by_id: dict[bytes, bytes] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for key in self.keys:
            if len(key) not in (16, 24, 32):
                raise ConfigurationError(
                    f"an encryption key in {KEYS_ENV} is {len(key)} bytes; use 16, 24 or 32."
                )
            self._by_id[key_id(key)] = key

    @property
    def on(self) -> bool:
        return bool(self.keys)

    def seal(self, plain: bytes, key: Name, field: Name = b"") -> bytes:
        """`plain` sealed for `key`/`field`: it opens there and nowhere else."""
        if not self.keys:
            return plain
        master = self.keys[0]
        nonce = get_random_bytes(_NONCE)
        cipher = AES.new(derive(master), AES.MODE_GCM, nonce=nonce)
        cipher.update(place(key, field))
        body, tag = cipher.encrypt_and_digest(plain)
        return MAGIC + key_id(master) + nonce + tag + body

    def open(self, stored: bytes | str, key: Name, field: Name = b"") -> bytes:
        """The plaintext of a value read from `key`/`field`.

        Raises `CorruptCheckpointError` for a value sealed elsewhere, altered or sealed
        by an unknown key, and `UnsealedValueError` for a plain value while encryption is on.
        """
        if isinstance(stored, str):
            stored = stored.encode()
        if not is_sealed(stored):
            if self.keys:
                raise UnsealedValueError(
                    f"the value at {_where(key, field)} is not sealed but encryption is on; "
                    "run `graphwright seal` to seal data written before encryption was on."
                )
            return stored
        kid = stored[len(MAGIC) : len(MAGIC) + _KID]
        master = self._by_id.get(kid)
        if master is None:
            raise CorruptCheckpointError(
                f"the value at {_where(key, field)} was sealed with key id {kid.hex()}, which "
                f"is not in {KEYS_ENV}; add the old key after the new one."
            )
        start = len(MAGIC) + _KID
        nonce, tag = stored[start : start + _NONCE], stored[start + _NONCE : _HEADER]
        v2 = stored.startswith(MAGIC)
        cipher = AES.new(derive(master) if v2 else master, AES.MODE_GCM, nonce=nonce)
        if v2:
            cipher.update(place(key, field))
        try:
            return cipher.decrypt_and_verify(stored[_HEADER:], tag)
        except ValueError as exc:
            raise CorruptCheckpointError(
                f"the sealed value at {_where(key, field)} failed its integrity check: it was "
                "sealed for another key or field, or altered"
            ) from exc

    def seal_text(self, plain: str, key: Name, field: Name = b"") -> bytes | str:
        return self.seal(plain.encode(), key, field) if self.keys else plain

    def open_text(self, stored: bytes | str, key: Name, field: Name = b"") -> str:
        return self.open(stored, key, field).decode()

    def seal_json(self, value: Any, key: Name, field: Name = b"") -> bytes | str:
        """A document (cron, assistant, calendar event...) as JSON, sealed for its place."""
        return self.seal_text(json.dumps(value, ensure_ascii=False), key, field)

    def open_json(self, stored: bytes | str, key: Name, field: Name = b"") -> Any:
        return json.loads(self.open(stored, key, field))

    def tags(self, data: bytes) -> tuple[str, ...]:
        """The keyed hashes of `data` under every key, newest first; none when off."""
        return tuple(
            hmac.new(_index_key(key), data, hashlib.sha256).hexdigest()[:32] for key in self.keys
        )

    def stale(self, stored: bytes) -> bool:
        """Sealed the old way or with a key other than the newest (`rekey` re-seals it)."""
        return (
            is_sealed(stored)
            and bool(self.keys)
            and (
                not stored.startswith(MAGIC)
                or stored[len(MAGIC) : len(MAGIC) + _KID] != key_id(self.keys[0])
            )
        )


@lru_cache(maxsize=16)
def _index_key(key: bytes) -> bytes:
    """The HMAC key of lookups, derived from (never equal to) an encryption key."""
    return hmac.new(key, b"graphwright index tag v1", hashlib.sha256).digest()


def is_sealed(stored: bytes) -> bool:
    """Whether stored bytes are a sealed value (either format) rather than plain data."""
    return stored.startswith((MAGIC, MAGIC_V1)) and len(stored) >= _HEADER


def parse_keys(text: str) -> tuple[bytes, ...]:
    """Comma-separated keys, newest first, as the environment gives them."""
    return tuple(k.strip().encode() for k in text.split(",") if k.strip())


def sealer_from_env(*, encrypt: bool) -> Sealer:
    """The sealer the settings ask for: keys from the environment when `encrypt` is on."""
    if not encrypt:
        return Sealer()
    keys = parse_keys(os.environ.get(KEYS_ENV) or os.environ.get(LEGACY_KEY_ENV) or "")
    if not keys:
        raise ConfigurationError(
            f"encryption at rest is on but neither {KEYS_ENV} nor {LEGACY_KEY_ENV} is set; "
            "set one to a 16, 24 or 32 byte key (several, comma-separated, newest first)."
        )
    return Sealer(keys)


def open_langgraph_aes(keys: Sequence[bytes], data: bytes) -> bytes:
    """Open a value LangGraph's own `aes` cipher wrote, trying each key.

    So checkpoints written before graphwright sealed them still load (and `rekey` moves them).
    """
    nonce, tag, body = data[:16], data[16:32], data[32:]
    for key in keys:
        try:
            return AES.new(key, AES.MODE_EAX, nonce=nonce).decrypt_and_verify(body, tag)
        except ValueError:
            continue
    raise CorruptCheckpointError(
        "no configured key opens a checkpoint LangGraph's AES cipher wrote"
    )
