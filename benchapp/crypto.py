"""Encryption at rest for credentials (Fernet, rotatable with MultiFernet).

BENCHBOARD_FERNET_KEYS lists keys newest first: the first encrypts, all
decrypt, so a new key can be put in front and `rotate_credentials` re-encrypts.
"""

import hashlib

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.FERNET_KEYS])


def encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()


def rotate(token: str) -> str:
    """Re-encrypt token with the newest key."""
    return _fernet().rotate(token.encode()).decode()


def fingerprint(plain: str) -> str:
    """A short, non-reversible tag shown instead of a secret ("sha256:ab12cd34")."""
    return "sha256:" + hashlib.sha256(plain.encode()).hexdigest()[:12]


def hash_token(token: str) -> str:
    """Share tokens are stored hashed: a leaked database does not leak links."""
    return hashlib.sha256(token.encode()).hexdigest()
