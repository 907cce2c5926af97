"""Secret redaction, pattern by pattern: each finds its secret and leaves the look-alike alone."""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.redaction import PATTERNS, redact, redact_fields


def fake(alphabet: str, n: int, seed: int = 7) -> str:
    """A deterministic ``n``-character string over ``alphabet`` (spread out, so it reads as random)."""
    return "".join(alphabet[(seed + i * 31 + i * i * 7) % len(alphabet)] for i in range(n))


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"

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
    "age_secret_key": (
        f"age key AGE-SECRET-KEY-1{fake('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)} in the vault",
        f"AGE-SECRET-KEY-1{fake('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)}",
        "age keys start with AGE-SECRET-KEY-1 followed by bech32",
    ),
    "gitlab_token": (
        f"push with glpat-{fake(ALNUM, 20)} to the mirror",
        f"glpat-{fake(ALNUM, 20)}",
        "GitLab tokens start with glpat- (e.g. glpat-short)",
    ),
    "discord_webhook": (
        f"post to https://discord.com/api/webhooks/112233445566778899/{fake(ALNUM + '_-', 68)} when done",
        fake(ALNUM + "_-", 68),
        "see https://discord.com/developers/docs/resources/webhook for webhooks",
    ),
    "discord_token": (
        f"bot token MTA4NjQ5NzQ1NjE2NjQ3NDc0OA.GaBcDe.{fake(ALNUM, 38)}",
        f"MTA4NjQ5NzQ1NjE2NjQ3NDc0OA.GaBcDe.{fake(ALNUM, 38)}",
        "Mr. Smith met Ms. Jones at 10.30. Version 2.11.4.final shipped.",
    ),
    "telegram_bot_token": (
        f"bot 7123456789:AA{fake(ALNUM + '_-', 33)} answers",
        f"7123456789:AA{fake(ALNUM + '_-', 33)}",
        "call at 12:30 AA meeting room 4096:AAB",
    ),
    "sendgrid_api_key": (
        f"mail via SG.{fake(ALNUM, 22)}.{fake(ALNUM, 43, seed=3)}",
        f"SG.{fake(ALNUM, 22)}.{fake(ALNUM, 43, seed=3)}",
        "SG.Wang reviewed the SendGrid docs",
    ),
    "twilio_api_key": (
        f"twilio key SK{fake(HEX, 32)} for sms",
        f"SK{fake(HEX, 32)}",
        "SKU-12345 ships from the SK warehouse",
    ),
    "npm_token": (
        f"//registry.npmjs.org/:_authToken npm_{fake(ALNUM, 36)}",
        f"npm_{fake(ALNUM, 36)}",
        "set npm_config_registry for the mirror",
    ),
    "pypi_token": (
        f"upload with pypi-AgEIcHlwaS5vcmc{fake(ALNUM + '_-', 60)}",
        f"pypi-AgEIcHlwaS5vcmc{fake(ALNUM + '_-', 60)}",
        "install pypi-server and point twine at it",
    ),
    "huggingface_token": (
        f"HF_TOKEN hf_{fake(ALNUM[:52], 34)} for the gated model",
        f"hf_{fake(ALNUM[:52], 34)}",
        "call hf_hub_download(repo_id='bert-base-uncased')",
    ),
    "digitalocean_token": (
        f"doctl auth with dop_v1_{fake(HEX, 64)}",
        f"dop_v1_{fake(HEX, 64)}",
        "DigitalOcean tokens start with dop_v1_",
    ),
    "shopify_token": (
        f"admin api shpat_{fake(HEX, 32)}",
        f"shpat_{fake(HEX, 32)}",
        "Shopify admin tokens start with shpat_",
    ),
    "hashicorp_token": (
        f"VAULT hvs.{fake(ALNUM, 90)}",
        f"hvs.{fake(ALNUM, 90)}",
        "vault service tokens start with hvs. these days",
    ),
    "atlassian_token": (
        f"jira ATATT3{fake(ALNUM + '_-=', 186)}",
        f"ATATT3{fake(ALNUM + '_-=', 186)}",
        "Atlassian API tokens begin with ATATT3",
    ),
    "databricks_token": (
        f"cluster token dapi{fake(HEX, 32)}",
        f"dapi{fake(HEX, 32)}",
        "the dapi prefix marks a Databricks token",
    ),
    "linear_api_key": (
        f"linear lin_api_{fake(ALNUM, 40)}",
        f"lin_api_{fake(ALNUM, 40)}",
        "linear keys look like lin_api_...",
    ),
    "postman_api_key": (
        f"postman PMAK-{fake(HEX, 24)}-{fake(HEX, 34, seed=5)}",
        f"PMAK-{fake(HEX, 24)}-{fake(HEX, 34, seed=5)}",
        "Postman keys start with PMAK-",
    ),
    "doppler_token": (
        f"doppler dp.pt.{fake(ALNUM, 43)}",
        f"dp.pt.{fake(ALNUM, 43)}",
        "the dp.pt. prefix is a Doppler personal token",
    ),
    "grafana_token": (
        f"grafana glsa_{fake(ALNUM, 32)}_{fake(HEX, 8)}",
        f"glsa_{fake(ALNUM, 32)}_{fake(HEX, 8)}",
        "service account tokens start with glsa_",
    ),
    "newrelic_key": (
        f"newrelic NRAK-{fake(ALNUM[:36], 27)}",
        f"NRAK-{fake(ALNUM[:36], 27)}",
        "New Relic user keys start with NRAK-",
    ),
    "docker_hub_token": (
        f"docker login -p dckr_pat_{fake(ALNUM + '_-', 27)}",
        f"dckr_pat_{fake(ALNUM + '_-', 27)}",
        "Docker Hub tokens start with dckr_pat_",
    ),
    "sentry_token": (
        f"SENTRY sntryu_{fake(HEX, 64)}",
        f"sntryu_{fake(HEX, 64)}",
        "sentry user tokens start with sntryu_",
    ),
    "notion_token": (
        f"notion ntn_{fake('0123456789', 11)}{fake(ALNUM, 35)}",
        f"ntn_{fake('0123456789', 11)}{fake(ALNUM, 35)}",
        "Notion tokens start with ntn_",
    ),
    "supabase_token": (
        f"supabase sbp_{fake(HEX, 40)}",
        f"sbp_{fake(HEX, 40)}",
        "Supabase access tokens start with sbp_",
    ),
    "ai_provider_key": (
        f"groq gsk_{fake(ALNUM, 52)}",
        f"gsk_{fake(ALNUM, 52)}",
        "Groq keys start with gsk_",
    ),
    "mailchimp_api_key": (
        f"mailchimp {fake(HEX, 32)}-us14",
        f"{fake(HEX, 32)}-us14",
        "the en-us locale and the 0123-us route",
    ),
    "square_token": (
        f"square sq0atp-{fake(ALNUM + '_-', 22)}",
        f"sq0atp-{fake(ALNUM + '_-', 22)}",
        "Square tokens start with sq0atp-",
    ),
    "heroku_token": (
        f"heroku HRKU-{fake(ALNUM + '_-', 60)}",
        f"HRKU-{fake(ALNUM + '_-', 60)}",
        "Heroku tokens start with HRKU-",
    ),
    "facebook_access_token": (
        f"graph api EAACEdEose0cBA{fake(ALNUM, 100)}",
        f"EAACEdEose0cBA{fake(ALNUM, 100)}",
        "EAAA and EAAB are grades, not tokens",
    ),
    "azure_ad_client_secret": (
        f"client secret abc8Q~{fake(ALNUM + '_~.-', 34)} for the app",
        f"abc8Q~{fake(ALNUM + '_~.-', 34)}",
        "the Q~ sequence alone means nothing",
    ),
    "azure_storage_key": (
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={fake(B64, 86)}==;EndpointSuffix=core.windows.net",
        f"{fake(B64, 86)}==",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=<your key>",
    ),
    "azure_sas_signature": (
        f"https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&sr=b&sig={fake(ALNUM, 43)}%3D",
        f"{fake(ALNUM, 43)}%3D",
        "https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&sig=short",
    ),
    "basic_auth": (
        "curl -H 'Authorization: Basic YWRtaW46czNjcmV0LXBhc3M=' https://api.example.com",
        "YWRtaW46czNjcmV0LXBhc3M=",
        "A basic understanding of authentication helps; Basic Authentication is documented",
    ),
    "authorization_header": (
        f"Authorization: Token {fake(HEX, 40)}",
        fake(HEX, 40),
        "the Authorization header is required for every call",
    ),
    "curl_user": (
        "curl -u admin:S3cret-pass https://api.example.com",
        "S3cret-pass",
        "curl -u admin https://api.example.com prompts for the password",
    ),
    "netrc_password": (
        "machine api.example.com login bob password s3cr3t-pw",
        "s3cr3t-pw",
        "machine learning login page password reset",
    ),
    "secret_flag": (
        "mysql --password S3cret!pw -h db.internal",
        "S3cret!pw",
        "pass the --password option to be prompted",
    ),
    "mysql_password": (
        "mysql -u root -hdb.internal -pKq7Zp2Lm9x app_db < dump.sql",
        "Kq7Zp2Lm9x",
        "mysql -u root -p app_db (prompts); mkdir -p /var/lib/mysql; docker run -p 3306:3306 mysql",
    ),
    "command_password_flag": (
        "sshpass -p 'Vq8n2Lrx7Tz' ssh ops@bastion and docker login -u ci -p Hk3mWq9Zr2 registry.acme.dev",
        "Vq8n2Lrx7Tz",
        "sqlcmd -S db -p (statistics); docker login -u ci --password-stdin; mongo -p; redis-cli -a $REDIS_PASS",
    ),
    "auth_field": (
        '{"auths": {"https://index.docker.io/v1/": {"auth": "Y2ktYm90OlZxOG4yTHJ4N1R6"}}}',
        "Y2ktYm90OlZxOG4yTHJ4N1R6",
        '{"auth": "enabled", "oauth": "Y2ktYm90OlZxOG4yTHJ4N1R6"}; _auth=aGVsbG8gd29ybGQ=',
    ),
    "pgpass_line": (
        "db.internal:5432:app:app_user:Wc4rT8kLp2Nz#1",
        "Wc4rT8kLp2Nz#1",
        "ratio 1:2:3:4:567890, std::map<int>::iterator, 2001:0db8:85a3:0000:0000:8a2e:0370:7334, 10:30:45:00",
    ),
    "base64_encoded_secret": (
        "  DATABASE_URL: cG9zdGdyZXM6Ly9hcHA6V0t6d3RUQmZWWjEjMjJAZGI6NTQzMi9hcHA=",
        "cG9zdGdyZXM6Ly9hcHA6V0t6d3RUQmZWWjEjMjJAZGI6NTQzMi9hcHA=",
        "  greeting: aGVsbG8gd29ybGQsIGhvdyBhcmUgeW91Pw== and src/billing/invoiceTotals/lineItems",
    ),
    "secret_in_prose": (
        "for the record my password is Tr0ub4dor&3 on the laptop",
        "Tr0ub4dor&3",
        "the password is stored in the vault and the token is refreshed hourly",
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
