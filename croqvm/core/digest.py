"""``sha256``: hashlib's SHA-256, taken from CPython's own implementation where it has
one. Importing ``hashlib`` loads OpenSSL, about 12 million instructions, a fiftieth of a
cached ``croqvm run`` (bench/startup.py), which hashes a ``.cqb`` payload and the key of
its cache entry and nothing else; the digests are the same."""
from __future__ import annotations

try:
    from _sha2 import sha256              # CPython 3.12 on
except ImportError:
    try:
        from _sha256 import sha256        # CPython 3.11
    except ImportError:
        from hashlib import sha256        # a Python built without its own hashes

__all__ = ["sha256"]
