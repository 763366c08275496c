"""Sealing through LangGraph's serializer: checkpoints and writes sealed like every other value.

Apart from `graphwright.checkpoints.sealed` so that what seals thread records, the trace and the
store (and the CLI's light reads) does not import LangGraph.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.sealed import (
    CHECKPOINT_PLACE,
    CIPHER_NAME,
    Sealer,
    UnsealedValueError,
    open_langgraph_aes,
)


class SealCipher(CipherProtocol):
    """LangGraph's cipher protocol over a Sealer, so checkpoints rotate keys like the rest.

    Checkpoints LangGraph's own AES cipher wrote (`aes`) still decrypt with any key.
    """

    def __init__(self, sealer: Sealer) -> None:
        self.sealer = sealer

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return CIPHER_NAME, self.sealer.seal(plaintext, CHECKPOINT_PLACE)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername == CIPHER_NAME:
            return self.sealer.open(ciphertext, CHECKPOINT_PLACE)
        if ciphername == "aes":
            return open_langgraph_aes(self.sealer.keys, ciphertext)
        raise CorruptCheckpointError(f"unknown cipher {ciphername!r} on a stored checkpoint")


class SealedSerializer(EncryptedSerializer):
    """LangGraph's encrypted serializer that refuses a checkpoint value stored in the clear."""

    def __init__(self, sealer: Sealer) -> None:
        super().__init__(SealCipher(sealer))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if "+" not in data[0]:
            raise UnsealedValueError(
                f"a checkpoint value ({data[0]}) is not sealed but encryption is on; run "
                "`graphwright seal` to seal data written before encryption was on."
            )
        return super().loads_typed(data)
