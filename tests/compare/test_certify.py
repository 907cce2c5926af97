"""Certification (same or not) and the named differences: one table per kind of difference.

Every pair is written for these tests (none comes from the plan data files). Each row asserts the
full verdict of ``certify`` and the exact differences ``describe`` names.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_tool_agent_memory.compare import Action, assess, certify, describe

# Trivial rewordings: politeness, articles, inflection, case, punctuation. All certified, nothing described.
TRIVIAL = [
    # politeness
    ("Restart the nginx service", "Please restart the nginx service"),
    ("Restart the nginx service", "Could you restart the nginx service?"),
    ("Archive the old invoices", "Can you archive the old invoices please"),
    ("Archive the old invoices", "Kindly archive the old invoices, thanks"),
    ("Rotate the API keys", "I want you to rotate the API keys"),
    ("Rotate the API keys", "Go ahead and rotate the API keys"),
    # articles
    ("Rebuild the search index", "Rebuild search index"),
    ("Add a retry to an upload", "Add retry to the upload"),
    # inflection
    ("Resize the thumbnail", "Resize the thumbnails"),
    ("Compress the log file", "Compress the log files"),
    ("Tag the release branch", "Tag the release branches"),
    ("Don't restart the worker", "Do not restart the workers"),
    # case
    ("Vacuum the postgres database", "VACUUM THE POSTGRES DATABASE"),
    ("Flush the redis cache", "flush the Redis cache"),
    # punctuation
    ("Bump the timeout to 30 seconds", "Bump the timeout to 30 seconds!!"),
    ("Reindex orders, then customers", "Reindex orders then customers."),
    ("Open /var/log/app.log", "Open /var/log/app.log."),
    # values written another way
    ("Set the timeout to 2 minutes", "set the timeout to 120 seconds"),
    ("Run the job at 3 pm", "Run the job at 15:00"),
    ("Keep five replicas", "keep 5 replicas"),
]


@pytest.mark.parametrize(("a", "b"), TRIVIAL)
def test_a_trivial_rewording_is_certified(a: str, b: str) -> None:
    assert certify(a, b).same
    assert certify(b, a).same
    assert describe(a, b) == ()


# (stored, asked, the exact differences described). None of these may be certified.
DIFFERENT = {
    "http method or a verb that is also a function word": [
        ("Allow only the admin role to call DELETE /api/projects/{id}.",
         "Allow only the admin role to call PUT /api/projects/{id}.", ["content: delete -> put"]),
        ("Send a GET request to /health", "Send a POST request to /health", ["content: get -> post"]),
        ("Get the feature flag value", "Set the feature flag value", ["content: get -> set"]),
        ("Make a copy of the config", "Take a copy of the config", ["content: make -> take"]),
        ("Use the staging bucket", "Create the staging bucket", ["content: use -> create"]),
    ],
    "swapped list items": [
        ("Add milk, eggs and bread to the list", "Add milk, bread and eggs to the list",
         ["order: eggs and bread -> bread and eggs"]),
        ("Migrate users then orders", "Migrate orders then users", ["order: users then orders -> orders then users"]),
        ("Switch hashing from bcrypt to argon2", "Switch hashing from argon2 to bcrypt",
         ["order: bcrypt to argon2 -> argon2 to bcrypt"]),
        ("Copy the files from staging to prod", "Copy the files from prod to staging",
         ["order: staging to prod -> prod to staging"]),
        ("Translate the German subtitles in the player to French",
         "Translate the French subtitles in the player to German",
         ["order: german subtitles in player to french -> french subtitles in player to german"]),
    ],
    "numbers bound to other nouns": [
        ("Reorder 200 boxes when stock drops below 30", "Reorder 30 boxes when stock drops below 200",
         ["number: 200 boxes -> 30 boxes", "number: 30 -> 200"]),
        ("Give 3 cores and 8 GB to the VM", "Give 8 cores and 3 GB to the VM",
         ["number: 3 cores -> 8 cores", "number: 8 gb -> 3 gb"]),
    ],
    "enumerated values": [
        ("Set the log level to debug", "Set the log level to info", ["content: debug -> info"]),
        ("Deploy to the staging environment", "Deploy to the production environment",
         ["content: staging -> production"]),
        ("Switch the editor to vim mode", "Switch the editor to emacs mode", ["content: vim -> emacs"]),
        ("Use strict TLS verification", "Use lenient TLS verification", ["content: strict -> lenient"]),
    ],
    "condition clauses": [
        ("Deploy the app if the tests pass", "Deploy the app unless the tests pass", ["content: if -> unless"]),
        ("Back up the database before the migration", "Back up the database after the migration",
         ["content: before -> after"]),
        ("Notify me when the build fails", "Notify me when the build succeeds", ["polarity: fails -> succeeds"]),
        ("Retry the upload if it times out", "Retry the upload", ["qualifier: if it times out -> (none)"]),
    ],
    "values": [
        ("Raise the limit to 20 requests per minute", "Raise the limit to 20 requests per second",
         ["number: 20 requests per minute -> 20 requests per second"]),
        ("Pin node to 18.2.0", "Pin node to 18.3.0", ["version: 18.2.0 -> 18.3.0"]),
        ("Run the report on 2025-03-14", "Run the report on 2025-03-21", ["date: 2025-03-14 -> 2025-03-21"]),
        ("Open /etc/hosts", "Open /etc/passwd", ["path: /etc/hosts -> /etc/passwd"]),
        ("Scale the API to 5 replicas", "Scale the API", ["number: 5 replicas -> (none)", "qualifier: to -> (none)"]),
    ],
    "polarity": [
        ("Enable dark mode", "Disable dark mode", ["polarity: enable -> disable"]),
        ("Increase the volume", "Decrease the volume", ["polarity: increase -> decrease"]),
        ("Restart the worker", "Don't restart the worker", ["polarity: (none) -> not"]),
        ("Lock the door", "Unlock the door", ["polarity: lock -> unlock"]),
    ],
    "a word on one side only": [
        ("Delete the cache", "Delete the cache locally", ["qualifier: (none) -> locally"]),
        ("Email the report to all users", "Email the report to all admin users", ["qualifier: (none) -> admin"]),
        ("Resize the avatar images", "Resize the images", ["qualifier: avatar -> (none)"]),
    ],
    "a shared WordNet sense is no certificate": [
        ("Stop the deployment", "Check the deployment", ["content: stop -> check"]),
        ("Clear the form", "Pass the form", ["content: clear -> pass"]),
        ("Block the user", "Stop the user", ["content: block -> stop"]),
        ("Show the sidebar", "Display the sidebar", ["content: show -> display"]),
    ],
}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [pytest.param(a, b, e, id=f"{group}: {b}") for group, rows in DIFFERENT.items() for a, b, e in rows],
)
def test_a_near_miss_is_not_certified_and_its_differences_are_named(a: str, b: str, expected: list[str]) -> None:
    result = certify(a, b)
    assert not result.same
    assert result.reason
    assert not certify(b, a).same
    assert [d.describe() for d in describe(a, b)] == expected


ALL_TEXTS = [t for pair in TRIVIAL for t in pair]
ALL_TEXTS += [t for rows in DIFFERENT.values() for a, b, _ in rows for t in (a, b)]

_words = st.sampled_from(["deploy", "the", "app", "to", "staging", "not", "5", "replicas", "please", "from", "prod",
                          "/etc/hosts", "if", "tests", "pass", "v2.1.0", "DELETE", "PUT", "at", "3pm", "and"])


@pytest.mark.parametrize("text", ALL_TEXTS)
def test_a_text_certifies_against_itself(text: str) -> None:
    assert certify(text, text).same
    assert describe(text, text) == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(_words, max_size=8), st.lists(_words, max_size=8))
def test_certification_is_symmetric_and_describes_nothing_only_when_certified(a: list[str], b: list[str]) -> None:
    x, y = " ".join(a), " ".join(b)
    assert certify(x, y).same == certify(y, x).same
    assert certify(x, x).same
    if certify(x, y).same:
        assert describe(x, y) == ()
    else:
        assert describe(x, y) != ()


def test_the_policy_acts_only_on_a_certificate_and_shows_nothing_under_the_floor() -> None:
    same = assess("Rebuild the search index", "please rebuild the search indexes", 0.3, floor=0.5)
    assert same.action is Action.ACT and same.certified and same.differences == ()
    near = assess("Enable dark mode", "Disable dark mode", 0.9, floor=0.5)
    assert near.action is Action.ASK and near.decided_by == "agent"
    assert [d.describe() for d in near.differences] == ["polarity: enable -> disable"]
    far = assess("Enable dark mode", "What is the weather", 0.1, floor=0.5)
    assert far.action is Action.NONE and far.differences == ()


class _Scripted:
    name = "provider"

    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str, int]] = []

    def same(self, stored: str, asked: str, differences: object) -> bool | None:
        self.asked.append((stored, asked, len(differences)))  # type: ignore[arg-type]
        return self.answer


def test_a_judge_settles_only_what_certification_left_open() -> None:
    yes, no, unsure = _Scripted(True), _Scripted(False), _Scripted(None)
    assert assess("Show the sidebar", "Display the sidebar", 0.9, floor=0.5, judge=yes).action is Action.ACT
    assert assess("Show the sidebar", "Display the sidebar", 0.9, floor=0.5, judge=no).action is Action.ASK
    fallback = assess("Show the sidebar", "Display the sidebar", 0.9, floor=0.5, judge=unsure)
    assert fallback.action is Action.ASK and fallback.decided_by == "agent"
    assert yes.asked == [("Show the sidebar", "Display the sidebar", 1)]
    certain = _Scripted(False)
    assert assess("Show the sidebar", "show the sidebar", 0.99, floor=0.5, judge=certain).certified
    assert assess("Show the sidebar", "Bake bread", 0.1, floor=0.5, judge=certain).action is Action.NONE
    assert certain.asked == []  # neither a certified pair nor one under the floor reaches the judge
