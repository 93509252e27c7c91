"""The operator's key-encryption keys (``--key-file ID=PEM``): RSA private keys by id, unwrapping each
segment's AES data key as the plugin wrapped it (``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` under
BouncyCastle, whose CipherSpi gives that padding ``MGF1ParameterSpec("SHA3-512")``: SHA3-512 for the
label hash and for MGF1).  The ``cryptography`` package offers no SHA3 in OAEP: RFC 8017's decoding is
written out here over the key's numbers."""
from __future__ import annotations

import hashlib
import os

from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote.store import RemoteTierError

#: PEM key loading, only when ``--key-file`` is given
serialization = lazy("cryptography.hazmat.primitives.serialization", globals())
_HASH_LEN = 64
_EMPTY_LABEL_HASH = hashlib.sha3_512(b"").digest()


def load_keys(key_files: dict[str, str] | None) -> dict:
    """key id -> RSA private key, from PEM files; a missing or unreadable file is one-line
    :class:`RemoteTierError`."""
    out = {}
    for key_id, path in (key_files or {}).items():
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise RemoteTierError(f"key file {path} (key id {key_id}): {e.strerror or e}", file=path) from None
        try:
            out[key_id] = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise RemoteTierError(f"key file {path} (key id {key_id}): not an unencrypted PEM private key: {e}",
                                  file=path) from None
    return out


def _mgf1(seed: bytes, length: int) -> bytes:
    """MGF1 over SHA3-512 (RFC 8017 B.2.1)."""
    out, counter = b"", 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def oaep_decode(em: bytes, k: int) -> bytes | None:
    """EME-OAEP decoding (RFC 8017 7.1.2 step 3) with SHA3-512 and MGF1-SHA3-512, an empty label;
    None when ``em`` is no such encoding (the wrong key)."""
    h = _HASH_LEN
    if len(em) != k or k < 2 * h + 2 or em[0] != 0:
        return None
    masked_seed, masked_db = em[1:1 + h], em[1 + h:]
    seed = _xor(masked_seed, _mgf1(masked_db, h))
    db = _xor(masked_db, _mgf1(seed, k - h - 1))
    rest = db[h:].lstrip(b"\x00")
    if db[:h] != _EMPTY_LABEL_HASH or not rest.startswith(b"\x01"):
        return None
    return rest[1:]


def oaep_encode(message: bytes, k: int, seed: bytes) -> bytes:
    """EME-OAEP encoding (RFC 8017 7.1.1 step 2; the test writer's)."""
    h = _HASH_LEN
    db = _EMPTY_LABEL_HASH + b"\x00" * (k - len(message) - 2 * h - 2) + b"\x01" + message
    masked_db = _xor(db, _mgf1(seed, k - h - 1))
    return b"\x00" + _xor(seed, _mgf1(masked_db, h)) + masked_db


def unwrap(keys: dict, key_id: str, wrapped: bytes) -> bytes:
    """The segment's AES data key: ``wrapped`` decrypted with the private key ``key_id`` (RSA, then
    OAEP decoded); no such key, or one that does not open it, is a ``remote-key`` :class:`KafkaFormatError`."""
    key = keys.get(key_id)
    if key is None:
        known = ", ".join(sorted(keys)) or "none"
        raise KafkaFormatError("remote-key", f"data key wrapped by key id {key_id!r}: no --key-file for it (given: {known})")
    numbers = key.private_numbers()
    n, k = numbers.public_numbers.n, (key.key_size + 7) // 8
    c = int.from_bytes(wrapped, "big")
    data = oaep_decode(pow(c, numbers.d, n).to_bytes(k, "big"), k) if len(wrapped) == k and c < n else None
    if data is None:
        raise KafkaFormatError("remote-key", f"data key wrapped by key id {key_id!r} does not open with its key file "
                                             f"(another key, or a damaged wrapped key)")
    return data


def wrap(public_key, data_key: bytes) -> bytes:
    """The plugin's wrapping of a data key (the test writer's): OAEP-encoded, RSA-encrypted."""
    numbers = public_key.public_numbers()
    k = (public_key.key_size + 7) // 8
    em = int.from_bytes(oaep_encode(data_key, k, os.urandom(_HASH_LEN)), "big")
    return pow(em, numbers.e, numbers.n).to_bytes(k, "big")
