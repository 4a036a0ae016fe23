"""Secrets kvconfig must never print: what looks like one, and the values it has seen.

kvconfig runs in CI on files from strangers and its output lands in public logs. A value
read from an env file (compose ``env_file``, ``.env``), and a variable whose name looks
secret (``HF_TOKEN``, ``*_KEY``, ``*_SECRET``, ``*PASSWORD*``, ...) wherever it was
written, is remembered while the files are read; ``redact`` then replaces each remembered
value, and anything shaped like a well-known token, by ``***`` in every output (text,
JSON, SARIF, GitHub annotations and error lines). docs/security.md.
"""

from __future__ import annotations

import re
from _thread import allocate_lock
from collections.abc import Mapping

#: Parts of a variable name that mark its value as a secret.
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|"
    r"(^|_)KEY$|(^|_)PASS$|(^|_)PWD$|(^|_)AUTH)",
    re.IGNORECASE,
)

#: Token formats printed nowhere, remembered or not (Hugging Face, OpenAI, GitHub, AWS,
#: Slack, bearer headers).
TOKEN = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|"
    r"github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})\b"
    r"|(?<=Bearer )[A-Za-z0-9._~+/-]{16,}=*"
)

MASK = "***"

_PLAIN = re.compile(r"^(-?[0-9.]+|true|false|yes|no|on|off|none|null)$", re.IGNORECASE)

_seen: set[str] = set()
_lock = allocate_lock()  # threading.Lock, without importing threading (cold start)


def secret_name(name: str) -> bool:
    """Whether a variable's name says its value is a secret."""
    return bool(SECRET_NAME.search(name))


def remember(value: str, *, secret: bool = True) -> None:
    """Never print ``value``. Short or plain values (numbers, booleans) from env files are
    kept unless ``secret`` (their variable's name looks secret)."""
    value = value.strip()
    if not value or (not secret and (len(value) < 6 or _PLAIN.match(value))):
        return
    if len(value) < 3:
        return
    import json

    with _lock:
        # as written, and as a JSON string holds it (the JSON, SARIF reports)
        _seen.update({value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]})


def remember_env(env: Mapping[str, str], *, every_value: bool = False) -> None:
    """Remember the secret-looking variables of ``env`` (every value: ``every_value``, as
    for an env file)."""
    for name, value in env.items():
        if every_value or secret_name(name):
            remember(str(value), secret=secret_name(name))


def seen() -> frozenset[str]:
    """The values remembered so far (a worker process sends them to its parent)."""
    with _lock:
        return frozenset(_seen)


def remember_seen(values: frozenset[str]) -> None:
    """Never print the values another process remembered (``seen``)."""
    with _lock:
        _seen.update(values)


def forget() -> None:
    """Forget the remembered values (the command line does at each run)."""
    with _lock:
        _seen.clear()


def redact(text: str) -> str:
    """``text`` with every remembered value and every token-shaped word masked."""
    with _lock:
        values = sorted(_seen, key=len, reverse=True)
    for value in values:
        if value in text:
            text = text.replace(value, MASK)
    return TOKEN.sub(MASK, text)


__all__ = ["MASK", "forget", "redact", "remember", "remember_env", "secret_name"]
