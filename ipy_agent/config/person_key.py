"""A secret of the person's, to sign what ipy_agent writes into a folder a command can change.

A file in the working directory (a saved conversation) can be edited by any command that runs
there, an allowed one included. What such a file carries that would loosen a prompt (the rules
granted with "always") is signed with an HMAC keyed by 32 random bytes (as hex) kept in the person's
settings folder (`base/paths.py: signing_key`, in `settings_dir()`): a protected surface, which the writable
sandbox binds read-only and the rule layer asks before writing, and a built-in Read deny that
no tool or sandboxed command can read (`permissions/rules.py`). So a signature that
verifies was made by this person's kernel; a hand-written or changed one does not verify.
The key is made on first use; a folder that cannot hold it means nothing gets signed (and so
nothing signed is restored), never an error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path

from ipy_agent.base.paths import signing_key

__all__ = ["sign", "verify"]

_KEY_BYTES = 32


def _key_path() -> Path:
    return signing_key()


def _read_key() -> bytes | None:
    try:
        key = bytes.fromhex(_key_path().read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return key if len(key) == _KEY_BYTES else None


def _key(create: bool) -> bytes | None:
    key = _read_key()
    if key is not None or not create:
        return key
    path = _key_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_key()  # made meanwhile by another kernel of the person's
    except OSError:
        return None
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(os.urandom(_KEY_BYTES).hex() + "\n")
    return _read_key()


def _message(purpose: str, data: object) -> bytes:
    return json.dumps([purpose, data], sort_keys=True, ensure_ascii=False).encode()


def sign(purpose: str, data: object) -> str | None:
    """The signature of `data` (JSON-able) for `purpose`, or None when no key can be made."""
    key = _key(create=True)
    if key is None:
        return None
    return hmac.new(key, _message(purpose, data), hashlib.sha256).hexdigest()


def verify(purpose: str, data: object, signature: object) -> bool:
    """Whether `signature` is this person's signature of `data` for `purpose`."""
    key = _key(create=False)
    if key is None or not isinstance(signature, str):
        return False
    expected = hmac.new(key, _message(purpose, data), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)
