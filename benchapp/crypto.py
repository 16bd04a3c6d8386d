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
    """A short tag shown instead of a secret ("hmac:ab12cd34..."), keyed with the
    server's SECRET_KEY: without that key, nobody can test password guesses
    against it offline (an unkeyed hash prefix allowed that)."""
    from django.utils.crypto import salted_hmac

    digest = salted_hmac("benchapp.crypto.fingerprint", plain, algorithm="sha256")
    return "hmac:" + digest.hexdigest()[:16]


def hash_token(token: str) -> str:
    """Share tokens are stored hashed: a leaked database does not leak links."""
    return hashlib.sha256(token.encode()).hexdigest()
