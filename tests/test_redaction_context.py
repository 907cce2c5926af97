"""Redaction by context: a value that a credential word names, in the forms people write it
(.env, YAML, JSON, code, CLI flags, prose), goes; code, placeholders, identifiers like
token_count, hashes, UUIDs and ordinary prose stay exactly as they were."""

from __future__ import annotations

import logging

import pytest
from secret_samples import KINDS, ORDINARY

from amplifier_module_tool_agent_memory.redaction import RedactingFilter, redact, redact_json, redact_text

# (text, the secret in it)
NAMED_BY_CONTEXT: list[tuple[str, str]] = [
    ("DB_PASSWORD=Wc4rT8kLp2Nz", "Wc4rT8kLp2Nz"),
    ("export GITHUB_TOKEN=abcdef123456", "abcdef123456"),
    ("SECRET_KEY='django-insecure-7h$k2m9q'", "django-insecure-7h$k2m9q"),
    ("TWILIO_AUTH_TOKEN=4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1", "4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1"),
    ("STRIPE_WEBHOOK_KEY=whk-live-2Fg8", "whk-live-2Fg8"),
    ("ENCRYPTION_KEY=3q2+7wEZ1uXk9/Lm0Pa=", "3q2+7wEZ1uXk9/Lm0Pa="),
    ("database:\n  password: s3cr3t-Pa55\n  host: db", "s3cr3t-Pa55"),
    ("  api_key: 'abc123xyz789'", "abc123xyz789"),
    ('{"user": "svc", "password": "correct horse battery staple"}', "correct horse battery staple"),
    ('{"clientSecret":"Zx8Qw2Lm9Tr5Yu1Io7Pa3Sd6"}', "Zx8Qw2Lm9Tr5Yu1Io7Pa3Sd6"),
    ('dbPassword = "pa ss w0rd"', "pa ss w0rd"),
    ("Server=db;Database=app;User Id=sa;Password=Sup3r-S3cret;", "Sup3r-S3cret"),
    ("https://api.example.com/v1?access_token=9f8e7d6c5b4a39281706&page=2", "9f8e7d6c5b4a39281706"),
    ("mysql -u root --password Hx7!kq2mZ -h db.internal", "Hx7!kq2mZ"),
    ("curl -u deploy:Qz8-rT5!pL https://ci.example.com", "Qz8-rT5!pL"),
    ("my password is hunter2!", "hunter2!"),
    ("The password for db.prod is 'blue sky 42'.", "blue sky 42"),
    ("the api key for stripe is 8f2a9c71e4b6 and it rotates", "8f2a9c71e4b6"),
    ("the passphrase was Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGV0c2VjcmV0\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGV0c2VjcmV0",
    ),
]

# Near misses written like the above: each must come back unchanged.
LEFT_ALONE: list[str] = [
    *ORDINARY,
    "token_count = 5; max_tokens: 512; next_token = page.next_token",
    "password_min_length: 12",
    "passwords: see the vault",
    "Password: ask the admin for it",
    "secret: true",
    "token: str = ''",
    "def connect(host: str, password: str | None = None) -> Conn:",
    "self.user, self.password = user, password",
    "token = get_token()",
    "password = settings.DB_PASSWORD",
    "client(api_key=api_key)",
    "if password == confirm: save()",
    '{"get_token": get_custom_token, "token_type": "jwt"}',
    "API_KEY=$API_KEY and TOKEN=${TOKEN}",
    "password: <your password here>",
    "the token is expired, the password is incorrect, the secret is to ship small",
    "I noticed a spiderman pin on your purse. Is Spider-Man your favourite?",
    "Tokenization and tokenizers: a token is a unit of text.",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 and tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "ids 123e4567-e89b-12d3-a456-426614174000, 0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10",
    "md5 d41d8cd98f00b204e9800998ecf8427e sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "The compass: north. The monkey is 6 years old. The key point is speed.",
    "http://localhost:8080/api and postgres://db.internal:5432/app",
    "A basic understanding of Basic Authentication helps.",
    "machine learning login page password reset",
    "pass the --password option to be prompted, or --token-file to read it",
    "FOREIGN_KEY=user_id and SSH_KEY=~/.ssh/id_ed25519 and PWD=/home/alice/project",
    "DB_PASSWORD=/run/secrets/db_password",
    "Credentials: see 1Password item 'prod db'",
]


@pytest.mark.parametrize(("text", "secret"), NAMED_BY_CONTEXT, ids=[t[:30] for t, _ in NAMED_BY_CONTEXT])
def test_a_value_named_by_a_credential_word_is_redacted(text: str, secret: str) -> None:
    cleaned, found = redact(text)
    assert secret not in cleaned
    assert found


@pytest.mark.parametrize("text", LEFT_ALONE, ids=[t[:30] for t in LEFT_ALONE])
def test_a_near_miss_is_left_as_it_is(text: str) -> None:
    assert redact(text) == (text, [])


def test_the_name_and_the_quotes_stay_so_the_text_keeps_its_shape() -> None:
    assert redact_text('{"password": "Jn3kV7xQ2mLs", "user": "svc"}') == (
        '{"password": "[REDACTED:password_assignment]", "user": "svc"}'
    )


def test_every_sample_kind_is_redacted() -> None:
    leaked = [kind for kind, sample in KINDS.items() if sample.secret in redact_text(sample.text)]
    assert leaked == []


def test_redact_json_reaches_every_depth_and_keys() -> None:
    found: list[str] = []
    value = {"steps": [{"env": {"DB_PASSWORD=Wc4rT8kLp2Nz": 1, "note": ["my password is hunter2!"]}}]}
    assert redact_json(value, found) == {
        "steps": [{"env": {"DB_PASSWORD=[REDACTED:password_assignment]": 1,
                           "note": ["my password is [REDACTED:secret_in_prose]!"]}}]
    }
    assert found == ["password_assignment", "secret_in_prose"]


def test_redact_json_redacts_a_value_under_a_credential_key_whatever_it_looks_like() -> None:
    assert redact_json({"api_key": "sunshine", "token_count": "sunshine"}) == {
        "api_key": "[REDACTED:password_assignment]", "token_count": "sunshine"
    }


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact_text("\n".join(sample.text for sample in KINDS.values()))
    assert redact(once) == (once, [])


def test_a_long_text_of_near_misses_is_handled_in_bounded_time() -> None:
    # Many names and separators: the context rules are anchored, not retried at every position.
    text = "a_b_c_d_e_f_g_h = 1; " * 2_000 + "token_count_" * 2_000
    assert redact(text) == (text, [])


def test_the_log_filter_redacts_message_extra_and_traceback() -> None:
    record = logging.LogRecord("amplifier_module_tool_agent_memory.x", logging.ERROR, __file__, 1,
                               "saw %s", ("DB_PASSWORD=Wc4rT8kLp2Nz",), None)
    record.detail = "my password is hunter2!"
    try:
        raise ValueError("bad ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    rendered = f"{record.getMessage()} {record.detail} {record.exc_text}"
    for secret in ("Wc4rT8kLp2Nz", "hunter2!", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"):
        assert secret not in rendered
