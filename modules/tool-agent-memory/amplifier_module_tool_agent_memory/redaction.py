"""Secret redaction: applied before anything is embedded or written.

Each pattern has a name; :func:`redact` returns the cleaned text and the names of the
patterns it found, so a tool result can say what was redacted without repeating it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REDACTED = "[REDACTED:{name}]"


@dataclass(frozen=True)
class SecretPattern:
    """A named secret shape. ``group`` is the part replaced (0 = the whole match)."""

    name: str
    regex: re.Pattern[str]
    group: int = 0


PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    SecretPattern("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    SecretPattern("openai_api_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    SecretPattern("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    SecretPattern("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b")),
    SecretPattern("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    SecretPattern("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+")),
    SecretPattern("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")),
    SecretPattern(
        "aws_secret_access_key",
        re.compile(r"(?i)\baws_?secret_?access_?key\b\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})[\"']?"),
        group=1,
    ),
    SecretPattern("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    SecretPattern("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    SecretPattern("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{20,}=*)"), group=1),
    # postgres://user:password@host and the like: only the password goes.
    SecretPattern("url_credentials", re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]+:([^\s/@]+)@"), group=1),
    SecretPattern(
        "password_assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
            r"\b\s*[:=]\s*(\"[^\"\s]{3,}\"|'[^'\s]{3,}'|[^\s,;\"']{3,})"
        ),
        group=1,
    ),
)


def redact(text: str) -> tuple[str, list[str]]:
    """Replace every secret in ``text``; return the new text and the pattern names found (in order)."""
    found: list[str] = []
    for pattern in PATTERNS:

        def _sub(match: re.Match[str], pattern: SecretPattern = pattern) -> str:
            value = match.group(pattern.group)
            if value.startswith("[REDACTED:"):
                return match.group(0)
            found.append(pattern.name)
            marker = REDACTED.format(name=pattern.name)
            if pattern.group == 0:
                return marker
            start, end = match.span(pattern.group)
            offset = match.start(0)
            whole = match.group(0)
            return whole[: start - offset] + marker + whole[end - offset :]

        text = pattern.regex.sub(_sub, text)
    return text, list(dict.fromkeys(found))


def redact_fields(fields: dict[str, str | list[str]]) -> tuple[dict[str, str | list[str]], dict[str, list[str]]]:
    """Redact several fields; return them cleaned and ``{field: [pattern names]}`` for those changed."""
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
