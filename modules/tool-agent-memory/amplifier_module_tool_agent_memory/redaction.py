"""Secret redaction: applied before anything is embedded, written, emitted or logged.

Two families of rules:

* **Formats**: credentials whose shape names them (a vendor prefix, a fixed layout, a
  PEM block, a URL's password, an ``Authorization`` header). These are matched anywhere.
* **Context**: a value that a credential word names, in the forms people write it:
  ``.env`` / shell (``DB_PASSWORD=...``), YAML (``api_key: ...``), JSON
  (``"password": "..."``), code (``token = "..."``), CLI flags (``--password ...``) and
  prose (``my password is ...``). The name decides (``token`` yes, ``token_count`` no);
  the value must look like one (code references, placeholders and plain English words
  after a colon are left alone).

Each rule has a name; :func:`redact` returns the cleaned text and the names of the rules
it fired, so a tool result can say what was redacted without repeating it. Only the
secret is replaced (``password=[REDACTED:password_assignment]``), so the text keeps its
meaning. Redacting twice changes nothing more.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import keyword
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REDACTED = "[REDACTED:{name}]"
_MARKER_START = "[REDACTED:"


@dataclass(frozen=True)
class SecretPattern:
    """A named secret shape.

    ``group`` is the part replaced (0 = the whole match). ``accept``, when given, is a
    structural check of the match beyond what a regex can say (e.g. a Basic credential
    must decode to ``user:password``); a match it refuses is left as it is.
    """

    name: str
    regex: re.Pattern[str]
    group: int = 0
    accept: Callable[[re.Match[str]], bool] | None = None
    # Lower-case substrings one of which every match contains: a text without any skips the regex.
    # Most text has none, and a substring test costs far less than a regex scan.
    hints: tuple[str, ...] = ()
    # Anchored rules: instead of scanning the whole text, the regex is tried only where a hint
    # occurs, starting at ``start_of(text, hint_position)`` (e.g. the start of the name around it).
    start_of: Callable[[str, int], int] | None = None
    # A shape rule's whole match is one run of token characters (see ``_RUN``): its hints are looked
    # for in those runs only, which ordinary prose hardly has.
    within_runs: bool = False

    def spans(self, text: str, lower: str, runs: str | None = None) -> list[tuple[int, int]]:
        """The spans of ``text`` to replace, in order (``lower`` is ``text.lower()``, position for
        position; ``runs`` the lower-cased long runs of token characters, see :func:`token_runs`).

        A match that holds no secret does not hide the text it spans: the search goes on from
        the next position, so ``password_note: password=<secret>`` (a first match on the label,
        refused) still finds the assignment inside it.
        """
        where = (runs if runs is not None else token_runs(text)) if self.within_runs else lower
        if self.within_runs and not where:
            return []
        if self.hints and not any(hint in where for hint in self.hints):
            return []
        found: list[tuple[int, int]] = []
        if self.start_of is None:
            at = 0
            while at <= len(text) and (match := self.regex.search(text, at)) is not None:
                span = self.secret_span(match)
                if span is None:
                    at = match.start() + 1
                    continue
                found.append(span)
                at = max(match.end(), match.start() + 1)
            return found
        starts: set[int] = set()
        for hint in self.hints:
            at = lower.find(hint)
            while at != -1:
                starts.add(self.start_of(text, at))
                at = lower.find(hint, at + 1)
        covered = -1
        for start in sorted(starts):
            if start < covered:
                continue
            match = self.regex.match(text, start)
            if match is None:
                continue
            span = self.secret_span(match)
            if span is not None:
                covered = match.end()
                found.append(span)
        return found

    def secret_span(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The span to replace for one match, or None when the match holds no secret."""
        value = match.group(self.group)
        if value is None or _MARKER_START in value:
            return None
        if self.accept is not None and not self.accept(match):
            return None
        start, end = match.span(self.group)
        if self.group != 0:
            width = _quote_width(value)  # keep the quotes: JSON and YAML stay well formed
            start, end = start + width, end - width
        return start, end


# ---------------------------------------------------------------------------------------
# Structural checks


def _has_digit_or_symbol(value: str) -> bool:
    return any(not ch.isalpha() for ch in value)


def _has_mixed_case_inside(value: str) -> bool:
    return any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)


def _word_like(value: str, joiners: str = "'\u2019-") -> bool:
    """Letters in the case a written word takes (``spider``, ``Spider-Man``, ``NASA``, ``don't``),
    parts joined by ``joiners``."""
    parts = re.split(f"[{re.escape(joiners)}]", value)
    return all(part.isalpha() and (part.islower() or part.isupper() or part.istitle()) for part in parts)


def _secret_like(value: str, joiners: str = "'\u2019-") -> bool:
    """A bare word that reads like a credential rather than English: long enough and not a written
    word (``hunter2``, ``Tr0ub4dor&3``, ``aZ9kQ...``), or a long digit string."""
    if len(value) < 6:
        return False
    if value.isdigit():
        return True
    if _word_like(value, joiners):
        return False
    return _has_digit_or_symbol(value) or _has_mixed_case_inside(value)


def _decodes_to_user_password(encoded: str) -> bool:
    """HTTP Basic credentials are base64 of ``user:password`` in printable text."""
    try:
        raw = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


def _mixed_key_material(value: str) -> bool:
    """40 characters of base64 with both cases and a digit or ``/+``: not a hex digest or a word run."""
    return (
        any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and any(ch.isdigit() or ch in "/+" for ch in value)
    )


# Values that name no secret: placeholders and references to one kept elsewhere.
_PLACEHOLDER = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?      # $VAR, ${VAR}
      | \{\{.*\}\} | \{%.*%\} | <[^<>]*>    # templates, <your-token>
      | %\(?[A-Za-z_]*\)?[sd]               # printf-style
      | \*+ | [xX]{3,} | \.\.\.+ | …         # masked or elided
      | \[REDACTED:[a-z0-9_]+\]             # already redacted
    )$""",
    re.VERBOSE,
)
# Language literals (JSON, YAML 1.1 booleans, Python/JS) and Python's own names (``token: str``):
# taken from the language rather than listed by hand.
_LITERALS = frozenset(
    {"true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off", "y", "n"}
    | {name.lower() for name in dir(builtins)}
    | {name.lower() for name in keyword.kwlist}
)
_DOTTED_REFERENCE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


def _not_a_placeholder(value: str) -> bool:
    return bool(value) and not _PLACEHOLDER.match(value) and not value.startswith(_MARKER_START)


def _quote_width(value: str) -> int:
    """How many characters quote ``value`` on each side: 1 (``"x"``, ``'x'``, ```x```), 2 for a
    JSON-escaped quote (``\\"x\\"``: JSON written inside a JSON string, as plan arguments carry it), else 0."""
    if len(value) >= 4 and value.startswith('\\"') and value.endswith('\\"'):
        return 2
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return 1
    return 0


def _unquoted(value: str) -> bool:
    return _quote_width(value) == 0


def _inner(value: str) -> str:
    width = _quote_width(value)
    return value[width:len(value) - width]


def _code_continues(match: re.Match[str], group: str) -> bool:
    """The value is followed by a call, an index or an attribute: code, not a literal secret."""
    end = match.end(group)
    return end < len(match.string) and match.string[end] in "([.{"


# ---------------------------------------------------------------------------------------
# Context rules: which names hold a secret.

# A credential word as the last component of a name: after a separator, at the start, or at a
# camelCase boundary, so DB_PASSWORD, dbPassword, TWILIO_AUTH_TOKEN, SECRET_KEY and AccountKey
# count, while token_count, password_hash, compass and csrf-free words do not.
_SEP = r"[_.\-]?"
_CREDENTIAL_WORD = (
    r"(?:pass(?:word|wd|phrase|code)?|pwd|pw|secret|credentials?|connection" + _SEP + r"string"
    r"|(?:[a-z]+" + _SEP + r")?token"
    r"|(?:api|secret|access|private|account|auth|master|encryption|signing|client|app|shared"
    r"|secret" + _SEP + r"access)" + _SEP + r"key|apikey)"
)
_NAME_ENDS_WITH_CREDENTIAL = re.compile(
    r"(?:^|(?<=[_.\-])|(?<=[a-z0-9])(?=[A-Z]))(?i:" + _CREDENTIAL_WORD + r")$"
)
# Upper-case environment names ending in _KEY (STRIPE_KEY, SSH_KEY): a key in the environment is a secret.
_ENV_KEY_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_KEY$")
# Upper-case environment names with the credential word glued to a prefix (PGPASSWORD, MYSQLPASSWORD,
# VAULTTOKEN): environment names are written in capitals, so no camelCase boundary shows where the word starts.
_ENV_GLUED_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN)$")
# Token counts and pagination cursors (max_token, NextToken, page_token) end in the word yet hold no secret.
_NON_SECRET_TOKEN_NAMES = re.compile(
    r"(?i)(?:^|[_.\-]|(?<=[a-z]))(?:max|min|num|next|page|continuation)[_.\-]?tokens?$"
)


def _credential_name(name: str) -> bool:
    if _NON_SECRET_TOKEN_NAMES.search(name):
        return False
    return bool(_NAME_ENDS_WITH_CREDENTIAL.search(name) or _ENV_KEY_NAME.match(name) or _ENV_GLUED_NAME.match(name))


# A file-system path names where a secret is kept (SSH_KEY=~/.ssh/id_ed25519, PWD=/home/me), not the secret.
_PATH_VALUE = re.compile(r"^(?:~|\.{1,2})?/[^\s]*$|^[A-Za-z]:[\\/]")


def _assignment_holds_secret(match: re.Match[str]) -> bool:
    if not _credential_name(match.group("name")):
        return False
    value = match.group("value")
    inner = _inner(value)
    if not _not_a_placeholder(inner):
        return False
    if not _unquoted(value):
        return True
    if len(inner) < 3:
        return False  # 0, 1, -1: flags and counts, not credentials
    if inner.lower() in _LITERALS or _DOTTED_REFERENCE.match(inner) or _code_continues(match, "value"):
        return False
    if inner.lower() == match.group("name").lower():
        return False  # f(password=password): a variable passed on, not its value
    if _PATH_VALUE.match(inner):
        return False
    name = match.group("name")
    if not _NAME_ENDS_WITH_CREDENTIAL.search(name) and not _secret_like(inner, joiners="'\u2019-_"):
        # Named only by ``*_KEY`` (FOREIGN_KEY=user_id) or a glued capital name (PGPASSWORD): weaker
        # evidence, so the value must look like a key.
        return False
    quoted_key = match.group("quoted_name") is not None and any(q in match.group("close") for q in "\"'`")
    if quoted_key and inner.isidentifier() and not inner.isdigit():
        # {"token": make_token}: a quoted key with a bare name is code (JSON has no bare words). An
        # assignment a quote only opens (``export X='DB_PASSWORD=abc'``) is shell, not a key.
        return False
    sep = match.group("sep")
    if sep.strip() == ":" and _word_like(inner):
        # ``Password: see the vault`` is prose about a password; ``password: hunter2`` is one.
        rest = match.string[match.end("value") :]
        if re.match(r"[ \t]+\S", rest):
            return False
    # ``token = next_token``: code (spaces around '=') assigning a variable; .env has no spaces.
    return not (sep.strip() == "=" and sep != "=" and inner.isidentifier() and not _secret_like_name(inner))


def _secret_like_name(identifier: str) -> bool:
    """An identifier that is more likely a literal secret than a variable: has a digit outside a
    trailing counter and no word separators (``hunter2x``, ``s3cr3t``), or is a long random run."""
    if "_" in identifier.strip("_"):
        return False
    return any(ch.isdigit() for ch in identifier) or (
        len(identifier) >= 16 and _has_mixed_case_inside(identifier) and any(ch.isdigit() for ch in identifier)
    )


def _prose_holds_secret(match: re.Match[str]) -> bool:
    value = match.group("value")
    inner = _inner(value)
    if not _not_a_placeholder(inner):
        return False
    return (not _unquoted(value) and bool(inner.strip())) or _secret_like(inner)


def _flag_holds_secret(match: re.Match[str]) -> bool:
    value = match.group(1)
    inner = _inner(value)
    return _not_a_placeholder(inner) and ((not _unquoted(value) and bool(inner)) or _secret_like(inner))


def _mysql_password_holds_secret(match: re.Match[str]) -> bool:
    """Whatever follows ``-p`` is the password, unless it is a placeholder (``-p$MYSQL_PWD``)."""
    return _not_a_placeholder(_inner(match.group("value")))


def _pgpass_holds_secret(match: re.Match[str]) -> bool:
    """A ``.pgpass`` line is ``host:port:database:user:password``: a host name must end right before the
    port, at the start of a line or after a space or quote, and the password must look like one."""
    before = match.string[max(0, match.start() - 256) : match.start()]
    host = re.search(r"(?:^|(?<=[\s\"'`])|(?<=\\[nrt]))(?:[A-Za-z0-9][A-Za-z0-9.\-]*|\*)$", before)
    if host is None or not (host.group(0) == "*" or _HOST_NAME.match(host.group(0))):
        return False  # 1:2:3:4:567890 is a ratio, not a host's line
    return _secret_like(match.group("value"))


_HOST_NAME = re.compile(r"^(?:[A-Za-z0-9.\-]*[A-Za-z][A-Za-z0-9.\-]*|\d{1,3}(?:\.\d{1,3}){3})$")


def _decodes_to_a_secret(match: re.Match[str]) -> bool:
    """Base64 of text that itself holds a secret (a Kubernetes Secret's ``data:``, an encoded URL)."""
    encoded = match.group(0)
    if len(encoded) % 4 or encoded.islower() or encoded.isupper():
        return False  # base64 of text mixes both cases; paths and words in one case are not it
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return decoded.isprintable() and bool(redact(decoded)[1])


def _authorization_holds_secret(match: re.Match[str]) -> bool:
    scheme = (match.group("scheme") or "").strip().lower()
    value = match.group("cred")
    if not _not_a_placeholder(value):
        return False
    if scheme == "basic":
        return _decodes_to_user_password(value)
    return _secret_like(value) or len(value) >= 20


# (command, its password flag) for commands whose short flag takes the password: the flag is matched
# case-sensitively (sqlcmd's -p is not its password, -P is).
_COMMAND_PASSWORD_FLAGS: tuple[tuple[str, str], ...] = (
    ("sshpass", "-p"),
    ("redis-cli", "-a"),
    (r"(?:docker|podman|buildah|skopeo|nerdctl|helm[ \t]+registry)[ \t]+login", "-p"),
    ("mongo(?:sh|dump|restore|import|export)?", "-p"),
    ("(?:sqlcmd|bcp)", "-P"),
)


def _quoted_or(body: str) -> str:
    """A value: JSON-escaped-quoted (``\\"...\\"``), double-, single- or back-quoted (spaces allowed),
    else ``body``."""
    return r"(?:\\\"(?:(?!\\\")[^\n])*\\\"|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|`[^`\n]*`|" + body + r")"


_CREDENTIAL_HINTS = ("pass", "pwd", "pw", "secret", "token", "key", "credential", "connection")
_HINTS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "age_secret_key": ("age-secret-key-",),
    "jwt": ("eyj",),
    "anthropic_api_key": ("sk-ant-",),
    "openai_api_key": ("sk-",),
    "google_api_key": ("aiza",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-",
                     "glagent-", "glffct-", "glwt-", "gr1348941"),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "discord_webhook": ("/api/webhooks/",),
    "discord_token": (".",),
    "telegram_bot_token": (":aa",),
    "aws_access_key_id": ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "abia", "acca"),
    "stripe_key": ("_live_", "_test_", "whsec_"),
    "sendgrid_api_key": ("sg.",),
    "twilio_api_key": ("sk",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-",),
    "huggingface_token": ("hf_", "api_org_"),
    "digitalocean_token": ("_v1_",),
    "shopify_token": ("shpat_", "shpca_", "shppa_", "shpss_"),
    "hashicorp_token": ("hvs.", "hvb.", ".atlasv1."),
    "atlassian_token": ("atatt3",),
    "databricks_token": ("dapi",),
    "linear_api_key": ("lin_api_", "lin_oauth_"),
    "postman_api_key": ("pmak-",),
    "doppler_token": ("dp.",),
    "grafana_token": ("glc_", "glsa_"),
    "newrelic_key": ("nrak-", "nrii-", "nrjs-"),
    "docker_hub_token": ("dckr_pat_",),
    "sentry_token": ("sntrys_", "sntryu_"),
    "notion_token": ("ntn_",),
    "supabase_token": ("sbp_",),
    "ai_provider_key": ("gsk_", "xai-", "r8_", "pplx-"),
    "mailchimp_api_key": ("-us",),
    "square_token": ("sq0atp-", "sq0csp-"),
    "heroku_token": ("hrku-",),
    "facebook_access_token": ("eaa",),
    "azure_ad_client_secret": ("q~",),
    "azure_storage_key": ("accountkey", "sharedaccesskey"),
    "azure_sas_signature": ("sig=",),
    "bearer_token": ("bearer",),
    "basic_auth": ("basic",),
    "authorization_header": ("authorization",),
    "url_credentials": ("://",),
    "curl_user": ("-u",),
    "netrc_password": ("machine",),
    "aws_secret_access_key": ("secret",),
    "password_assignment": _CREDENTIAL_HINTS,
    "secret_flag": ("-pass", "-pwd", "-token", "-secret", "-api", "-access", "-auth"),
    "secret_in_prose": ("pass", "pwd", "key", "token", "secret"),
    "mysql_password": ("mysql", "mariadb"),
    "command_password_flag": ("sshpass", "redis-cli", "docker", "podman", "buildah", "skopeo", "nerdctl", "helm",
                              "mongo", "sqlcmd", "bcp"),
    "auth_field": ("auth",),
    "pgpass_line": (":",),
    "base64_encoded_secret": (),
}


# Token characters: what keys, tokens, base64 and URLs are made of. Every shape rule's match is one
# run of these, at least 16 long (the shortest shape, an AWS key id, has 20).
_RUN = re.compile(r"[A-Za-z0-9_\-.+/=~:]{16,}")
_SHAPE_RULES = frozenset(
    name for name in _HINTS if name not in {
        "private_key", "azure_storage_key", "azure_sas_signature", "bearer_token", "basic_auth",
        "authorization_header", "url_credentials", "curl_user", "netrc_password", "aws_secret_access_key",
        "password_assignment", "secret_flag", "secret_in_prose", "mysql_password", "command_password_flag",
        "auth_field", "pgpass_line",
    }
)


def token_runs(text: str) -> str:
    """The long runs of token characters in ``text``, lower-cased and joined by spaces."""
    return " ".join(_RUN.findall(text)).lower()


def _p(name: str, regex: str, group: int | str = 0, accept: Callable[[re.Match[str]], bool] | None = None,
       flags: int = 0, start_of: Callable[[str, int], int] | None = None) -> SecretPattern:
    compiled = re.compile(regex, flags)
    index = compiled.groupindex[group] if isinstance(group, str) else group
    return SecretPattern(name, compiled, index, accept, _HINTS[name], start_of, within_runs=name in _SHAPE_RULES)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_MAX_NAME = 100


_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_.\-]")
_NOT_RUN_CHAR = re.compile(r"[^A-Za-z0-9_\-]")


def _back_to(text: str, at: int, stop: re.Pattern[str]) -> int:
    """The start of the stretch ending at ``at`` without a ``stop`` character (at most _MAX_NAME back)."""
    low = max(0, at - _MAX_NAME)
    # Reversed, the nearest stop character before ``at`` is the first match: one C-level scan.
    hit = stop.search(text[low:at][::-1])
    return at - hit.start() if hit else low


def _name_start(text: str, at: int) -> int:
    """Where the name holding position ``at`` starts (letters, digits, ``_ . -``; a leading ``.``/``-`` is not part)."""
    start = _back_to(text, at, _NOT_NAME_CHAR)
    if start > 0 and text[start - 1] == "\\" and start < at and text[start] in "nrt":
        start += 1  # ``\npassword = x``: a line of a config file JSON-escaped into a string starts after the escape
    while start < at and text[start] in ".-":
        start += 1
    return start


def _run_start(text: str, at: int) -> int:
    """Where the run of token characters (letters, digits, ``_ -``) ending at ``at`` starts."""
    return _back_to(text, at, _NOT_RUN_CHAR)


def _word_start(text: str, at: int) -> int:
    """The hint itself: prose rules match from the credential word on."""
    return at


# Order matters: the most specific rule names a secret first; later rules skip redacted text.
PATTERNS: tuple[SecretPattern, ...] = (
    # --- blocks and structured tokens --------------------------------------------------
    _p(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        flags=re.DOTALL,
    ),
    _p("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    _p("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # --- vendor prefixes ---------------------------------------------------------------
    _p("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    _p("openai_api_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
    _p("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b"),
    _p("gitlab_token", r"\b(?:gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct|wt)-[A-Za-z0-9_\-]{20,}"
       r"|GR1348941[A-Za-z0-9_\-]{20,})"),
    _p("slack_token", r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}"),
    _p("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+"),
    _p("discord_webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"),
    _p("discord_token",
       r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-])",
       start_of=_run_start),
    _p("telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])"),
    _p("aws_access_key_id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    _p("stripe_key", r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})\b"),
    _p("sendgrid_api_key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    _p("twilio_api_key", r"\bSK[0-9a-fA-F]{32}\b", start_of=_word_start),
    _p("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _p("pypi_token", r"\bpypi-[A-Za-z0-9_\-]{50,}"),
    _p("huggingface_token", r"\b(?:hf_|api_org_)[A-Za-z0-9]{30,}\b"),
    _p("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    _p("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    _p("hashicorp_token", r"\b(?:hv[sb]\.[A-Za-z0-9_\-]{24,}|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,})"),
    _p("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{100,}"),
    _p("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    _p("linear_api_key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b"),
    _p("postman_api_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    _p("doppler_token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b"),
    _p("grafana_token", r"\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b)"),
    _p("newrelic_key", r"\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,27}\b"),
    _p("docker_hub_token", r"\bdckr_pat_[A-Za-z0-9_\-]{27,}"),
    _p("sentry_token", r"\bsntry[su]_[A-Za-z0-9+/=_\-]{40,}"),
    _p("notion_token", r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b"),
    _p("supabase_token", r"\bsbp_[a-f0-9]{40}\b"),
    _p("ai_provider_key",
       r"\b(?:gsk_[A-Za-z0-9]{48,}|xai-[A-Za-z0-9]{70,}|r8_[A-Za-z0-9]{37}|pplx-[A-Za-z0-9]{40,})\b"),
    _p("mailchimp_api_key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    _p("square_token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43}(?![A-Za-z0-9_\-])"),
    _p("heroku_token", r"\bHRKU-[A-Za-z0-9_\-]{58,}"),
    _p("facebook_access_token", r"\bEAA[A-Za-z0-9]{60,}\b"),
    _p("azure_ad_client_secret",
       r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
    # --- credentials by position ---------------------------------------------------------
    _p("azure_storage_key", r"(?i)\b(?:Account|SharedAccess)Key\s*=\s*([A-Za-z0-9+/]{20,}={0,2})", 1),
    _p("azure_sas_signature", r"[?&]sig=([A-Za-z0-9%+/=]{20,})", 1),
    _p("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{20,}=*)", 1),
    _p("basic_auth", r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", 1,
       lambda m: _decodes_to_user_password(m.group(1))),
    _p("authorization_header",
       r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?P<scheme>(?:bearer|token|bot|digest|apikey|key"
       r"|sso-key|dsn|hmac|negotiate|ntlm)\s+)?(?P<cred>[A-Za-z0-9\-._~+/:=]{8,})", "cred",
       _authorization_holds_secret),
    # scheme://user:password@host, and scheme://:password@host (redis): only the password goes.
    _p("url_credentials", r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]*:([^\s/@]+)@", 1),
    _p("curl_user", r"(?:^|\s)(?:-u|--user)\s*[\"']?[^\s:\"']+:([^\s\"']+)", 1),
    _p("netrc_password", r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S+)", 1,
       lambda m: _secret_like(m.group(1))),
    # "AWS secret ... <40 chars of key material>": the secret access key, wherever it is written.
    _p("aws_secret_access_key",
       r"(?i)secret[^\n]{0,40}?(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", 1,
       lambda m: _mixed_key_material(m.group(1))),
    # --- context: a credential word names the value ------------------------------------
    _p("password_assignment",
       r"(?:(?<![\w.\-$])|(?<=\\[nrt]))(?P<quoted_name>(?<=[\"'`]))?(?P<name>[A-Za-z_][\w.\-]{0,100})(?P<close>(?:\\?[\"'`]|\*){0,2})"
       r"(?P<sep>[ \t]*(?::=|=>|:(?![:/])|=(?!=))[ \t]*)"
       r"(?P<value>" + _quoted_or(r"[^\s\"'`,;<>(){}\[\]]+") + r")",
       "value", _assignment_holds_secret, start_of=_name_start),
    _p("secret_flag",
       r"(?i)(?<![\w\-])--?(?:[a-z0-9]+-)*(?:password|passwd|passphrase|pass|token|secret|api-?key|access-key"
       r"|auth-token)(?:[ \t]+|=)(?!-)(" + _quoted_or(r"[^\s\"'`]+") + r")", 1, _flag_holds_secret),
    # mysql -pSECRET: the MySQL clients take the password glued to -p (a bare -p prompts for it).
    _p("mysql_password",
       r"(?<![\w\-])(?i:mysql\w*|mariadb[\w\-]*)(?:[ \t]+(?!-p)[^\s|;&]+){0,12}?[ \t]+-p(?P<value>"
       + _quoted_or(r"[^\s\"'`|;&]+") + r")", "value", _mysql_password_holds_secret),
    # Commands that take a password in a short flag of their own (``sshpass -p``, ``docker login -p``,
    # ``redis-cli -a``, ``sqlcmd -P``): one entry of _COMMAND_PASSWORD_FLAGS each.
    _p("command_password_flag",
       r"(?<![\w\-])(?:" + "|".join(
           rf"(?:{command})(?:[ \t]+(?!(?-i:{flag})\b)[^\s|;&]+){{0,12}}?[ \t]+(?-i:{flag})"
           for command, flag in _COMMAND_PASSWORD_FLAGS
       ) + r")(?:[ \t]*|=)(?!-)(?P<value>" + _quoted_or(r"[^\s\"'`|;&]+") + r")",
       "value", _mysql_password_holds_secret, flags=re.IGNORECASE, start_of=_word_start),
    # ``"auth": "<base64 of user:password>"`` (docker's config.json) and ``_auth=`` (.npmrc).
    _p("auth_field",
       r"(?:(?<![\w\-])|(?<=\\[nrt]))_?auth(?:[\\]?[\"'])?[ \t]*[:=][ \t]*(?:[\\]?[\"'])?"
       r"(?P<value>[A-Za-z0-9+/]{8,}={0,2})"
       r"(?![A-Za-z0-9+/=])", "value", lambda m: _decodes_to_user_password(m.group("value"))),
    # ``host:port:database:user:password`` (.pgpass); the match starts at the port's colon.
    _p("pgpass_line",
       r":(?:\d{1,5}|\*):[^\s:\"'\\]+:[^\s:\"'\\]+:(?P<value>[^\s:\"'\\]+)(?![^\s\"'\\])",
       "value", _pgpass_holds_secret),
    # Base64 whose decoded text holds a secret: the rules run again on the decoded text.
    # Possessive: a run is taken whole once (a refused run is not retried from inside, suffix by suffix).
    _p("base64_encoded_secret", r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}+={0,2}+(?![A-Za-z0-9+/=])",
       accept=_decodes_to_a_secret),
    _p("secret_in_prose",
       r"(?<![A-Za-z0-9_\-])(?i:pass(?:word|phrase|code)|pwd|key|token|secret)(?![A-Za-z0-9_\-])"
       r"(?:[ \t]+(?:for|of|to|on|at|in)(?:[ \t]+[\w@:/\-]+(?:\.[\w@:/\-]+)*){1,3})?"
       r"[ \t]+(?-i:is|was|are|reads)[ \t]+(?:(?:now|still|just|actually|set[ \t]+to)[ \t]+)?"
       r"(?P<value>" + _quoted_or(r"[^\s\"'`]*[^\s\"'`.,;:!?)]") + r")",
       "value", _prose_holds_secret, start_of=_word_start),
)


def redact(text: str) -> tuple[str, list[str]]:
    """Replace every secret in ``text``; return the new text and the rule names found (in order, once each)."""
    found: list[str] = []
    lower = _lower(text)
    # Computed once: a replacement only removes token characters, so these stay a superset (hints only).
    runs = token_runs(text)
    for pattern in PATTERNS:
        spans = pattern.spans(text, lower, runs)
        if not spans:
            continue
        marker = REDACTED.format(name=pattern.name)
        for start, end in reversed(spans):
            text = text[:start] + marker + text[end:]
        found.extend([pattern.name] * len(spans))
        lower = _lower(text)
    return text, list(dict.fromkeys(found))


def _lower(text: str) -> str:
    """``text.lower()`` with the same length (a few characters lower-case to two; those stay as they are)."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def length_before_redaction(text: str) -> int:
    """The length ``text`` had at most before it was redacted, counting each marker as one character
    (a secret is at least one): limits of what was given still hold for what was stored."""
    return len(_MARKER.sub("x", text))


def redact_text(text: str) -> str:
    """``redact`` without the report: for log lines and event fields."""
    return redact(text)[0]


def redact_fields(fields: dict[str, str | list[str]]) -> tuple[dict[str, str | list[str]], dict[str, list[str]]]:
    """Redact several fields; return them cleaned and ``{field: [rule names]}`` for those changed."""
    cleaned: dict[str, str | list[str]] = {}
    report: dict[str, list[str]] = {}
    for name, value in fields.items():
        if isinstance(value, str):
            cleaned[name], hits = redact(value)
        else:
            items = []
            hits = []
            for item in value:
                new, item_hits = redact(item)
                items.append(new)
                hits.extend(item_hits)
            cleaned[name] = items
            hits = list(dict.fromkeys(hits))
        if hits:
            report[name] = hits
    return cleaned, report


def redact_json(value: object, found: list[str] | None = None) -> object:
    """A JSON value with every string in it (keys included) redacted; ``found`` collects the rule names.

    A value stored under a credential key (``{"password": "x"}``) is redacted whole even when it
    does not look like one, because its key says what it is.
    """
    hits = found if found is not None else []
    # Recursive: the nesting depth of tool input is bounded by validation (see validation.py) first.
    return _redact_json(value, hits, key=None)


def _redact_json(value: object, found: list[str], key: str | None) -> object:
    if isinstance(value, str):
        if key is not None and _credential_name(key) and _not_a_placeholder(value) and value.strip():
            found.append("password_assignment")
            return REDACTED.format(name="password_assignment")
        cleaned, hits = redact(value)
        found.extend(hits)
        return cleaned
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            new_key, key_hits = redact(str(k)) if isinstance(k, str) else (k, [])
            found.extend(key_hits)
            out[new_key] = _redact_json(v, found, key=k if isinstance(k, str) else None)
        return out
    if isinstance(value, list | tuple):
        return [_redact_json(v, found, key=key) for v in value]
    return value


def names_in(hits: Iterable[str]) -> list[str]:
    """The rule names once each, in first-seen order."""
    return list(dict.fromkeys(hits))


# ---------------------------------------------------------------------------------------
# Logs

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class RedactingFilter(logging.Filter):
    """Redacts a record's message, its ``extra`` strings and its traceback text before any handler sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        try:
            record.msg = redact_text(record.getMessage())
            record.args = None
            for key, value in list(record.__dict__.items()):
                if key not in _RECORD_ATTRS and isinstance(value, str):
                    setattr(record, key, redact_text(value))
            if record.exc_info and not record.exc_text:
                # Formatters reuse exc_text when it is set: the traceback is shown redacted.
                record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
            if record.exc_text:
                # The exception itself still holds its unredacted message, and a handler that renders
                # exc_info on its own (rich, error trackers) would show it: only the redacted text is left.
                record.exc_info = None
            if record.stack_info:
                record.stack_info = redact_text(record.stack_info)
        except Exception:  # a log line must never fail the caller
            return True
        return True


_FILTER = RedactingFilter()


def install_log_redaction() -> None:
    """Put the redacting filter on the logger of every module of this package.

    Filters on a logger see only that logger's own records (not its children's), so each
    module's logger gets it; loggers are created here first, before their module is imported.
    """
    package = __name__.rpartition(".")[0]
    folder = Path(__file__).parent
    names = {package}
    for path in folder.rglob("*.py"):
        parts = path.relative_to(folder).with_suffix("").parts
        names.add(".".join((package, *parts)).removesuffix(".__init__"))
    for name in names:
        log = logging.getLogger(name)
        if _FILTER not in log.filters:
            log.addFilter(_FILTER)


install_log_redaction()
