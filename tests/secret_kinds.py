"""The secret kinds a user's memory or a plan's arguments really carry, as people write them, and the
surroundings they arrive in (plain data: the redaction tests and ``benchmarks/secret_probe.py`` read it).

Each kind is one or more secrets written the way the tool that takes them writes them (an ``.env``
line, a config file, a header, a command). Every secret is generated from a seeded random source in
the kind's published shape, long and distinct, so finding it in a tool's answer or a store's bytes
can only mean it leaked. A surrounding wraps a kind's text: the start of a note, mid-sentence, a JSON
document, YAML, ``.env``, a shell command, and a plan's action arguments.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from typing import NamedTuple

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = DIGITS + "abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


class Kind(NamedTuple):
    """``text`` as a person writes it; ``secrets`` the parts that must never be stored."""

    name: str
    text: str
    secrets: tuple[str, ...]


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` characters over ``alphabet`` with at least one upper, lower and digit when it has them."""
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        wants = [set(a) & set(alphabet) for a in (UPPER, LOWER, DIGITS)]
        if all(not want or set(value) & want for want in wants):
            return value


def _password(rng: random.Random) -> str:
    """A password people choose when told to: letters, digits and a symbol, 14 characters."""
    return _pick(rng, ALNUM, 11) + rng.choice("!#%^*") + _pick(rng, DIGITS, 2)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _pem(rng: random.Random, label: str) -> tuple[str, str]:
    body = "\n".join(_pick(rng, B64, 64) for _ in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----", body.splitlines()[1]


def _kinds(rng: random.Random) -> list[Kind]:
    out: list[Kind] = []

    def add(name: str, text: str, *secrets: str) -> None:
        out.append(Kind(name, text, secrets))

    key_id, secret_key = "AKIA" + _pick(rng, UPPER + DIGITS, 16), _pick(rng, B64, 40)
    add("aws_credentials_file", f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret_key}\n",
        key_id, secret_key)
    key_id2, secret_key2 = "AKIA" + _pick(rng, UPPER + DIGITS, 16), _pick(rng, B64, 40)
    add("aws_env", f"AWS_ACCESS_KEY_ID={key_id2} AWS_SECRET_ACCESS_KEY={secret_key2} aws s3 ls", key_id2, secret_key2)
    pem, line = _pem(rng, "PRIVATE KEY")
    gcp = json.dumps({"type": "service_account", "project_id": "acme-prod", "private_key_id": _pick(rng, HEX, 40),
                      "private_key": pem + "\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}, indent=1)
    add("gcp_service_account_json", gcp, line)
    account_key = _pick(rng, B64, 86) + "=="
    add("azure_storage_connection_string",
        f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={account_key};"
        "EndpointSuffix=core.windows.net", account_key)
    sig = _pick(rng, ALNUM, 43) + "%3D"
    add("azure_sas_url", f"https://acmelogs.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl"
        f"&se=2026-12-31T00:00:00Z&sig={sig}", sig)
    ghp = "ghp_" + _pick(rng, ALNUM, 36)
    add("github_token", f"GITHUB_TOKEN={ghp}", ghp)
    pat = "github_pat_" + _pick(rng, ALNUM, 22) + "_" + _pick(rng, ALNUM, 59)
    add("github_fine_grained_pat", f"git clone https://{pat}@github.com/acme/infra.git", pat)
    glpat = "glpat-" + _pick(rng, URLSAFE, 20)
    add("gitlab_token", f"the CI mirror pushes with {glpat}", glpat)
    xoxb = f"xoxb-{_pick(rng, DIGITS, 12)}-{_pick(rng, DIGITS, 13)}-{_pick(rng, ALNUM, 24)}"
    add("slack_bot_token", f"SLACK_BOT_TOKEN={xoxb}", xoxb)
    xapp = f"xapp-1-A{_pick(rng, UPPER + DIGITS, 10)}-{_pick(rng, DIGITS, 13)}-{_pick(rng, HEX, 64)}"
    add("slack_app_token", f"socket mode app token {xapp}", xapp)
    hook = f"T{_pick(rng, UPPER + DIGITS, 8)}/B{_pick(rng, UPPER + DIGITS, 10)}/{_pick(rng, ALNUM, 24)}"
    add("slack_webhook", f"alerts go to https://hooks.slack.com/services/{hook}", hook.rsplit("/", 1)[1])
    stripe = "sk_live_" + _pick(rng, ALNUM, 99)
    add("stripe_secret_key", f"stripe.api_key = \"{stripe}\"", stripe)
    twilio = _pick(rng, HEX, 32)
    add("twilio_auth_token", f"TWILIO_ACCOUNT_SID=AC{_pick(rng, HEX, 32)}\nTWILIO_AUTH_TOKEN={twilio}", twilio)
    sendgrid = f"SG.{_pick(rng, URLSAFE, 22)}.{_pick(rng, URLSAFE, 43)}"
    add("sendgrid_api_key", f"SENDGRID_API_KEY='{sendgrid}'", sendgrid)
    npm = "npm_" + _pick(rng, ALNUM, 36)
    add("npmrc_token", f"//registry.npmjs.org/:_authToken={npm}", npm)
    npm_auth = _b64(f"ci-bot:{_password(rng)}")
    add("npmrc_basic_auth", f"registry=https://npm.acme.dev/\n_auth={npm_auth}\nalways-auth=true", npm_auth)
    pypi = "pypi-AgEIcHlwaS5vcmc" + _pick(rng, URLSAFE, 120)
    add("pypirc_token", f"[pypi]\nusername = __token__\npassword = {pypi}\n", pypi)
    hf = "hf_" + _pick(rng, UPPER + LOWER, 34)
    add("huggingface_token", f"huggingface-cli login --token {hf}", hf)
    openai = "sk-proj-" + _pick(rng, URLSAFE, 156)
    add("openai_api_key", f"export OPENAI_API_KEY={openai}", openai)
    anthropic = "sk-ant-api03-" + _pick(rng, URLSAFE, 93) + "AA"
    add("anthropic_api_key", f"client = Anthropic(api_key=\"{anthropic}\")", anthropic)
    google = "AIza" + _pick(rng, URLSAFE, 35)
    add("google_api_key", f"maps key {google} (restricted to our domain)", google)
    gocspx = "GOCSPX-" + _pick(rng, URLSAFE, 28)
    add("google_oauth_client_secret",
        json.dumps({"installed": {"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": gocspx}}),
        gocspx)
    ya29 = "ya29." + _pick(rng, URLSAFE, 120)
    add("google_oauth_access_token", f"curl -H 'Authorization: Bearer {ya29}' https://www.googleapis.com/drive/v3",
        ya29)
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"})).rstrip("=")
    claims = _b64(json.dumps({"sub": _pick(rng, DIGITS, 10), "name": "svc", "iat": 1716239022})).rstrip("=")
    jwt = f"{header}.{claims}.{_pick(rng, URLSAFE, 43)}"
    add("jwt", f"session cookie jwt={jwt}; Path=/; HttpOnly", jwt)
    bearer = _pick(rng, URLSAFE, 40)
    add("bearer_header", f"Authorization: Bearer {bearer}", bearer)
    basic = _b64(f"deploy:{_password(rng)}")
    add("basic_auth_header", f"curl -H \"Authorization: Basic {basic}\" https://api.acme.dev/v1/status", basic)
    rsa, rsa_line = _pem(rng, "RSA PRIVATE KEY")
    add("pem_rsa_private_key", rsa, rsa_line)
    ssh, ssh_line = _pem(rng, "OPENSSH PRIVATE KEY")
    add("ssh_private_key", f"cat > ~/.ssh/id_ed25519 <<EOF\n{ssh}\nEOF", ssh_line)
    pg = _password(rng)
    add("postgres_url", f"DATABASE_URL=postgresql://app:{pg}@db.internal:5432/app", pg)
    my = _password(rng)
    add("mysql_url", f"mysql://root:{my}@10.0.0.12:3306/shop", my)
    mongo = _pick(rng, ALNUM, 20)
    add("mongodb_srv_url", f"mongodb+srv://svc:{mongo}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true", mongo)
    redis = _pick(rng, ALNUM, 24)
    add("redis_url", f"REDIS_URL=rediss://default:{redis}@cache.acme.dev:6380/0", redis)
    netrc = _password(rng)
    add("netrc", f"machine api.heroku.com\n  login ops@acme.dev\n  password {netrc}\n", netrc)
    pgpass = _password(rng)
    add("pgpass", f"db.internal:5432:app:app_user:{pgpass}", pgpass)
    docker = _b64(f"ci-bot:{_password(rng)}")
    add("docker_config_auth", json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": docker}}}), docker)
    k8s_password, k8s_url = _b64(_password(rng)), _b64(f"postgres://app:{_password(rng)}@db:5432/app")
    add("kubernetes_secret", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
        f"  password: {k8s_password}\n  DATABASE_URL: {k8s_url}\n", k8s_password, k8s_url)
    flag = _password(rng)
    add("password_flag", f"psql --host db.internal --username app --password {flag}", flag)
    pgpassword = _password(rng)
    add("pgpassword_env", f"PGPASSWORD={pgpassword} pg_dump -h db.internal app > app.sql", pgpassword)
    mysql_p = _password(rng).replace("!", "x").replace("#", "y")
    add("mysql_short_flag", f"mysql -u root -p{mysql_p} -h 10.0.0.12 shop", mysql_p)
    docker_login = _password(rng)
    add("docker_login_flag", f"docker login -u ci-bot -p {docker_login} registry.acme.dev", docker_login)
    sshpass = _password(rng)
    add("sshpass_flag", f"sshpass -p '{sshpass}' ssh ops@bastion.acme.dev", sshpass)
    redis_cli = _pick(rng, ALNUM, 24)
    add("redis_cli_flag", f"redis-cli -h cache.acme.dev -a {redis_cli} FLUSHALL", redis_cli)
    env_secret = _pick(rng, ALNUM, 32)
    add("env_assignment", f"DJANGO_SECRET_KEY={env_secret}", env_secret)
    yaml_pw = _password(rng)
    add("yaml_field", f"database:\n  host: db.internal\n  password: \"{yaml_pw}\"\n", yaml_pw)
    json_key = _pick(rng, ALNUM, 32)
    add("json_field", json.dumps({"service": "search", "apiKey": json_key}), json_key)
    toml_token = _pick(rng, ALNUM, 32)
    add("toml_field", f"[tool.poetry.http-basic.acme]\nusername = \"ci\"\npassword = \"{toml_token}\"\n", toml_token)
    ini = _password(rng)
    add("ini_field", f"[smtp]\nhost = mail.acme.dev\nuser = alerts\npass = {ini}\n", ini)
    url_token = _pick(rng, ALNUM, 32)
    add("url_token_parameter", f"https://api.acme.dev/export?format=csv&access_token={url_token}&page=2", url_token)
    url_key = _pick(rng, ALNUM, 32)
    add("url_api_key_parameter", f"GET https://maps.acme.dev/geocode?q=Lisbon&api_key={url_key}", url_key)
    prose = _password(rng)
    add("prose_password", f"the wifi password is {prose}", prose)
    return out


KINDS: tuple[Kind, ...] = tuple(_kinds(random.Random(3517)))


def _json_document(text: str) -> str:
    return json.dumps({"note": "from the runbook", "snippet": text, "owner": "ops"})


def _plan_arguments(text: str) -> str:
    return json.dumps({"tool": "bash", "args": {"command": text, "env": {"STEP": "deploy"}}})


# surrounding -> how a kind's text arrives in it
SURROUNDINGS: dict[str, Callable[[str], str]] = {
    "start": lambda x: x,
    "mid_sentence": lambda x: f"Yesterday on the staging box I used {x} and it worked fine.",
    "json": _json_document,
    "yaml": lambda x: "runbook:\n  step: deploy\n  snippet: |\n" + "".join(f"    {ln}\n" for ln in x.splitlines()),
    "dotenv": lambda x: f"APP_ENV=production\n{x}\nLOG_LEVEL=info\n",
    "shell_command": lambda x: f"ssh deploy@bastion.acme.dev <<'REMOTE'\n{x}\nREMOTE\necho done",
    "plan_arguments": _plan_arguments,
}


class Case(NamedTuple):
    kind: str
    surrounding: str
    text: str
    secrets: tuple[str, ...]


CASES: tuple[Case, ...] = tuple(
    Case(kind.name, where, wrap(kind.text), kind.secrets) for kind in KINDS for where, wrap in SURROUNDINGS.items()
)
ALL_SECRETS: frozenset[str] = frozenset(s for kind in KINDS for s in kind.secrets)


def leaked(text: str) -> list[str]:
    """The kinds whose secrets appear in ``text``."""
    return sorted({kind.name for kind in KINDS for s in kind.secrets if s in text})
