"""Secrets as people paste them, one per common kind, for the redaction tests (plain data, not fixtures).

Every secret value is distinct and long enough that finding it in a tool's output or in a
store's bytes can only mean it leaked.
"""

from __future__ import annotations

import base64
from typing import NamedTuple

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
LETTERS = ALNUM[:52]
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def fake(alphabet: str, n: int, seed: int) -> str:
    """A deterministic ``n``-character string over ``alphabet`` that reads as random (one per seed)."""
    return "".join(alphabet[(seed * 13 + i * 31 + i * i * 7) % len(alphabet)] for i in range(n))


class Secret(NamedTuple):
    """``text`` as a person would write it; ``secret`` the part that must never be stored."""

    text: str
    secret: str


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


_AZURE_KEY = fake(B64, 86, 2) + "=="
_BASIC = _basic("deploy", "Vq8#n2Lr!x")

# The fifteen kinds issue 10 found passing, then a few of the older ones.
KINDS: dict[str, Secret] = {
    "gitlab": Secret(f"mirror push uses glpat-{fake(ALNUM, 20, 1)} as the token", f"glpat-{fake(ALNUM, 20, 1)}"),
    "azure_account_key": Secret(
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={_AZURE_KEY};EndpointSuffix=core.windows.net",
        _AZURE_KEY,
    ),
    "twilio_env": Secret(f"TWILIO_AUTH_TOKEN={fake(HEX, 32, 3)}", fake(HEX, 32, 3)),
    "sendgrid": Secret(f"mail relay key SG.{fake(ALNUM, 22, 4)}.{fake(ALNUM, 43, 5)}",
                       f"SG.{fake(ALNUM, 22, 4)}.{fake(ALNUM, 43, 5)}"),
    "npm": Secret(f"//registry.npmjs.org/:_authToken=npm_{fake(ALNUM, 36, 6)}", f"npm_{fake(ALNUM, 36, 6)}"),
    "pypi": Secret(f"twine upload -p pypi-AgEIcHlwaS5vcmc{fake(ALNUM, 60, 7)}",
                   f"pypi-AgEIcHlwaS5vcmc{fake(ALNUM, 60, 7)}"),
    "huggingface": Secret(f"HF token hf_{fake(LETTERS, 34, 8)} for the gated model", f"hf_{fake(LETTERS, 34, 8)}"),
    "redis_url": Secret("REDIS_URL=redis://:Qm7vX2pLk9Rz@cache.internal:6379/0", "Qm7vX2pLk9Rz"),
    "basic_auth": Secret(f"curl -H 'Authorization: Basic {_BASIC}' https://api.example.com/v1", _BASIC),
    "env_db_password": Secret("DB_PASSWORD=Wc4rT8kLp2Nz", "Wc4rT8kLp2Nz"),
    "env_secret_key": Secret("SECRET_KEY=django-insecure-7h$k2m9q!xv4", "django-insecure-7h$k2m9q!xv4"),
    "prose_password": Secret("fyi my password is Zt6pQ1wYr8Ke for the staging box", "Zt6pQ1wYr8Ke"),
    "json_password": Secret('{"user": "svc", "password": "Jn3kV7xQ2mLs"}', "Jn3kV7xQ2mLs"),
    "aws_secret_prose": Secret(
        f"the AWS secret key is {fake(B64, 40, 9)} for the backup bucket", fake(B64, 40, 9)
    ),
    "discord": Secret(f"bot token MTA4NjQ5NzQ1NjE2NjQ3NDc0OA.GaBcDe.{fake(ALNUM, 38, 10)}",
                      f"MTA4NjQ5NzQ1NjE2NjQ3NDc0OA.GaBcDe.{fake(ALNUM, 38, 10)}"),
    "github": Secret(f"clone with ghp_{fake(ALNUM, 36, 11)}", f"ghp_{fake(ALNUM, 36, 11)}"),
    "openai": Secret(f"OPENAI key sk-proj-{fake(ALNUM, 40, 12)}", f"sk-proj-{fake(ALNUM, 40, 12)}"),
    "yaml_api_key": Secret(f"service:\n  api_key: {fake(ALNUM, 24, 13)}\n", fake(ALNUM, 24, 13)),
    "private_key": Secret(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{fake(B64, 64, 14)}\n-----END OPENSSH PRIVATE KEY-----",
        fake(B64, 64, 14),
    ),
}

# Text that looks near a secret but holds none: every word must survive redaction.
ORDINARY: tuple[str, ...] = (
    "The password policy requires 12 characters and a rotation every 90 days.",
    "token_count = len(tokens); max_tokens: 512",
    "Set the api_key field in the settings page; the token is refreshed hourly.",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the flaky test",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "def login(user: str, password: str) -> None: ...",
    "password = request.form['password']",
    "DB_PASSWORD=${DB_PASSWORD}",
    "api_key: <your-api-key>",
    "A basic understanding of tokens helps. The secret is to start small.",
    "Our key decision: ship on Friday. Spider-Man is my favourite hero.",
    "http://localhost:8080/health and https://example.com/docs?page=2",
    "Tokenization splits text into tokens; the tokenizer has 30,522 entries.",
)
