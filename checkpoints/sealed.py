"""Encryption at rest for every stored payload: one ``Sealer`` that the stores call.

A sealed value is ``MAGIC + key id (8) + nonce (12) + tag (16) + ciphertext`` (AES-GCM).
The first key encrypts; every key decrypts, so a new key can be put in front of the old
ones and ``graphwright rekey`` re-encrypts what is stored. Values that are not sealed
read as they are (data written before encryption was turned on).

Lookups that must not show plaintext (the thread index's metadata pairs) use a keyed hash,
``tags``: an HMAC under a key derived from each encryption key, the newest first. Writers
use the newest tag; readers look under every tag, so a rotation misses nothing and
``graphwright rekey`` re-indexes under the newest key before the old one goes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from langgraph.checkpoint.serde.base import CipherProtocol

from checkpoints.errors import CorruptCheckpointError
from graphwright_errors import ConfigurationError

MAGIC = b"GWS1"
KEYS_ENV = "GRAPHWRIGHT_ENCRYPTION_KEYS"  # comma-separated, newest first
LEGACY_KEY_ENV = "LANGGRAPH_AES_KEY"  # LangGraph's own single key, still honoured
CIPHER_NAME = "gwseal"
_KID, _NONCE, _TAG = 8, 12, 16
_HEADER = len(MAGIC) + _KID + _NONCE + _TAG


def key_id(key: bytes) -> bytes:
    return hashlib.sha256(b"graphwright-key-id" + key).digest()[:_KID]


@dataclass(frozen=True)
class Sealer:
    """Seals and opens bytes; with no keys it is the identity (encryption off)."""

    keys: tuple[bytes, ...] = ()
    _by_id: dict[bytes, bytes] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for key in self.keys:
            if len(key) not in (16, 24, 32):
                raise ConfigurationError(
                    f"an encryption key in {KEYS_ENV} is {len(key)} bytes; use 16, 24 or 32.")
            self._by_id[key_id(key)] = key

    @property
    def on(self) -> bool:
        return bool(self.keys)

    def seal(self, plain: bytes) -> bytes:
        if not self.keys:
            return plain
        key = self.keys[0]
        from Crypto.Cipher import AES  # the cipher only where a value is sealed or opened
        from Crypto.Random import get_random_bytes

        nonce = get_random_bytes(_NONCE)
        body, tag = AES.new(key, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(plain)
        return MAGIC + key_id(key) + nonce + tag + body

    def open(self, stored: bytes | str) -> bytes:
        if isinstance(stored, str):
            stored = stored.encode()
        if not is_sealed(stored):
            return stored
        kid = stored[len(MAGIC): len(MAGIC) + _KID]
        key = self._by_id.get(kid)
        if key is None:
            raise CorruptCheckpointError(
                f"a stored value was sealed with key id {kid.hex()}, which is not in {KEYS_ENV}; "
                "add the old key after the new one.")
        start = len(MAGIC) + _KID
        nonce, tag = stored[start: start + _NONCE], stored[start + _NONCE: _HEADER]
        from Crypto.Cipher import AES

        try:
            return AES.new(key, AES.MODE_GCM, nonce=nonce).decrypt_and_verify(stored[_HEADER:], tag)
        except ValueError as exc:
            raise CorruptCheckpointError(f"a sealed value failed its integrity check: {exc}") from exc

    def seal_text(self, plain: str) -> bytes | str:
        return self.seal(plain.encode()) if self.keys else plain

    def open_text(self, stored: bytes | str) -> str:
        return self.open(stored).decode()

    def tags(self, data: bytes) -> tuple[str, ...]:
        """The keyed hashes of ``data`` under every key, newest first; none when off."""
        return tuple(hmac.new(_index_key(key), data, hashlib.sha256).hexdigest()[:32]
                     for key in self.keys)

    def stale(self, stored: bytes) -> bool:
        """Sealed with a key other than the newest (``rekey`` re-seals it)."""
        return is_sealed(stored) and bool(self.keys) and \
            stored[len(MAGIC): len(MAGIC) + _KID] != key_id(self.keys[0])


@lru_cache(maxsize=16)
def _index_key(key: bytes) -> bytes:
    """The HMAC key of lookups, derived from (never equal to) an encryption key."""
    return hmac.new(key, b"graphwright index tag v1", hashlib.sha256).digest()


def is_sealed(stored: bytes) -> bool:
    return stored.startswith(MAGIC) and len(stored) >= _HEADER


def parse_keys(text: str) -> tuple[bytes, ...]:
    return tuple(k.strip().encode() for k in text.split(",") if k.strip())


def sealer_from_env(*, encrypt: bool) -> Sealer:
    """The sealer the settings ask for: keys from the environment when ``encrypt`` is on."""
    if not encrypt:
        return Sealer()
    keys = parse_keys(os.environ.get(KEYS_ENV) or os.environ.get(LEGACY_KEY_ENV) or "")
    if not keys:
        raise ConfigurationError(
            f"encryption at rest is on but neither {KEYS_ENV} nor {LEGACY_KEY_ENV} is set; "
            "set one to a 16, 24 or 32 byte key (several, comma-separated, newest first).")
    return Sealer(keys)


class SealCipher(CipherProtocol):
    """LangGraph's cipher protocol over a Sealer, so checkpoints rotate keys like the rest.

    Checkpoints LangGraph's own AES cipher wrote (``aes``) still decrypt with any key."""

    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return CIPHER_NAME, self.sealer.seal(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername == CIPHER_NAME:
            return self.sealer.open(ciphertext)
        if ciphername == "aes":
            return open_langgraph_aes(self.sealer.keys, ciphertext)
        raise CorruptCheckpointError(f"unknown cipher {ciphername!r} on a stored checkpoint")


def open_langgraph_aes(keys: Sequence[bytes], data: bytes) -> bytes:
    from Crypto.Cipher import AES

    nonce, tag, body = data[:16], data[16:32], data[32:]
    for key in keys:
        try:
            return AES.new(key, AES.MODE_EAX, nonce=nonce).decrypt_and_verify(body, tag)
        except ValueError:
            continue
    raise CorruptCheckpointError("no configured key opens a checkpoint LangGraph's AES cipher wrote")
