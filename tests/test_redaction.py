"""Secret redaction, pattern by pattern: each finds its secret and leaves the look-alike alone."""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.redaction import PATTERNS, redact, redact_fields

# name -> (text with a secret, the secret itself, a near miss that must be left as it is)
CASES: dict[str, tuple[str, str, str]] = {
    "private_key": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
        "-----END RSA PRIVATE KEY-----\nthanks",
        "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu",
        "-----BEGIN PUBLIC KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf\n"
        "-----END PUBLIC KEY-----",
    ),
    "anthropic_api_key": (
        "export ANTHROPIC_KEY sk-ant-api03-Zx8Qw2Lm9Tr5Yu1Io7Pa3Sd6Fg4Hj0Kl",
        "sk-ant-api03-Zx8Qw2Lm9Tr5Yu1Io7Pa3Sd6Fg4Hj0Kl",
        "the sk-ant- prefix marks Anthropic keys, e.g. sk-ant-short",
    ),
    "openai_api_key": (
        "use sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56 for the demo",
        "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
        "the risk-assessment-for-the-quarter-2026 doc and the sk-learn library",
    ),
    "google_api_key": (
        "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY in the config",
        "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        "AIzaSyShort is not a full key",
    ),
    "github_token": (
        "clone with ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 please",
        "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "the ghp_ prefix is a GitHub token, ghp_tooShort1234 is not one",
    ),
    "slack_token": (
        "bot token xoxb-2048-1024-AbCdEfGhIjKlMnOp",
        "xoxb-2048-1024-AbCdEfGhIjKlMnOp",
        "xoxb-123 is too short to be a token",
    ),
    "slack_webhook": (
        "alerts go to https://hooks.slack.com/services/T0001/B0002/XyZ123abc456",
        "T0001/B0002/XyZ123abc456",
        "see https://api.slack.com/messaging/webhooks for how webhooks work",
    ),
    "aws_access_key_id": (
        "AWS_ACCESS_KEY_ID AKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7 is truncated",
    ),
    "aws_secret_access_key": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "merged in commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    ),
    "stripe_key": (
        "charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "sk_prod_4eC39HqLyjWDarjtT1zdp7dc is not a Stripe prefix",
    ),
    "jwt": (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "a JWT header starts with eyJhbGciOi and has three dot-separated parts",
    ),
    "bearer_token": (
        "curl -H 'Authorization: Bearer 3q2-7wEZ1uXk9_Lm0PaVbNcTdYe4' https://api.example.com",
        "3q2-7wEZ1uXk9_Lm0PaVbNcTdYe4",
        "the API expects a bearer token in the Authorization header",
    ),
    "url_credentials": (
        "DATABASE_URL=postgres://billing:Tr0ub4dor&3@db.internal:5432/billing",
        "Tr0ub4dor&3",
        "connect to postgres://db.internal:5432/billing as user billing",
    ),
    "password_assignment": (
        'db password="hunter2-staging"',
        "hunter2-staging",
        "the password policy requires 12 characters; passwords: see the vault",
    ),
}


def test_every_pattern_has_a_case() -> None:
    assert set(CASES) == {p.name for p in PATTERNS}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_redacts_its_secret(name: str) -> None:
    text, secret, _ = CASES[name]
    cleaned, found = redact(text)
    assert secret not in cleaned
    assert f"[REDACTED:{name}]" in cleaned
    assert found == [name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_leaves_a_near_miss_alone(name: str) -> None:
    _, _, near_miss = CASES[name]
    assert redact(near_miss) == (near_miss, [])


def test_redaction_keeps_the_text_around_the_secret() -> None:
    cleaned, _ = redact("use sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56 for the demo")
    assert cleaned == "use [REDACTED:openai_api_key] for the demo"


def test_an_assignment_keeps_its_name_and_loses_its_value() -> None:
    assert redact("API_KEY: 8f2a9c71e4") == ("API_KEY: [REDACTED:password_assignment]", ["password_assignment"])


def test_a_private_key_without_its_end_line_is_redacted_to_the_end() -> None:
    cleaned, found = redact("pasted: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
    assert cleaned == "pasted: [REDACTED:private_key]"
    assert found == ["private_key"]


def test_a_secret_is_reported_once_by_its_most_specific_pattern() -> None:
    cleaned, found = redact("token=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    assert cleaned == "token=[REDACTED:github_token]"
    assert found == ["github_token"]


def test_several_secrets_in_one_text_are_all_redacted_and_named_once_each() -> None:
    text = "AKIAIOSFODNN7EXAMPLE and AKIAI44QH8DHBEXAMPLE and password: s3cr3t!"
    cleaned, found = redact(text)
    assert cleaned == (
        "[REDACTED:aws_access_key_id] and [REDACTED:aws_access_key_id] and password: [REDACTED:password_assignment]"
    )
    assert found == ["aws_access_key_id", "password_assignment"]


def test_redacting_twice_changes_nothing_more() -> None:
    once, _ = redact(CASES["jwt"][0] + " " + CASES["password_assignment"][0])
    assert redact(once) == (once, [])


def test_redact_fields_reports_only_the_fields_it_changed() -> None:
    cleaned, report = redact_fields(
        {
            "content": "nothing secret here",
            "tags": ["ops", "AKIAIOSFODNN7EXAMPLE"],
            "files": ["keys/sk_live_4eC39HqLyjWDarjtT1zdp7dc.txt"],
        }
    )
    assert cleaned == {
        "content": "nothing secret here",
        "tags": ["ops", "[REDACTED:aws_access_key_id]"],
        "files": ["keys/[REDACTED:stripe_key].txt"],
    }
    assert report == {"tags": ["aws_access_key_id"], "files": ["stripe_key"]}
