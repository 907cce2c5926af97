"""The comparison memory and the cache act on (``compare.policy.compared``, at the local model's cosine): one test
per kind of difference, restatements, unrelated texts.

Every pair is written for these tests (none comes from the dev data sets).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_tool_agent_memory.compare import (
    DIFFERENCE_KINDS,
    Comparison,
    Verdict,
)
from amplifier_module_tool_agent_memory.compare.policy import compared, cosine
from amplifier_module_tool_agent_memory.embeddings import CachedEmbedder


class Comparator:
    """``compared`` at the whole-text cosine of the real local model, as memory and the cache call it."""

    def __init__(self, embedder: CachedEmbedder) -> None:
        self.embedder = embedder

    def compare(self, a: str, b: str, *, vectors: tuple[list[float], list[float]] | None = None) -> Comparison:
        va, vb = vectors if vectors is not None else self.embedder.embed_documents([a, b])
        return compared(a, b, cosine(va, vb))

    def judge(self, a: str, b: str, similarity: float) -> Comparison:
        return compared(a, b, similarity)


@pytest.fixture(scope="module")
def comparator(embedder: CachedEmbedder) -> Comparator:
    return Comparator(embedder)


def kinds(result: Comparison) -> set[str]:
    return {d.kind for d in result.differences}


CASES = [
    ("number", "The cluster has 6 worker nodes", "The cluster has 8 worker nodes"),
    ("date", "The report is due on 2025-03-14", "The report is due on 2025-03-21"),
    ("time", "The standup starts at 9:30", "The standup starts at 10:15"),
    ("version", "Deploy release 2.4.1 to staging", "Deploy release 2.4.2 to staging"),
    ("identifier", "Call fetchUser in the handler", "Call fetchOrder in the handler"),
    ("path", "Set the log level in logger.py", "Set the log level in handler.py"),
    ("url", "Point the webhook at https://hooks.acme.io/build", "Point the webhook at https://hooks.acme.io/deploy"),
    ("colour", "Paint the header background #ff8800", "Paint the header background #0088ff"),
    ("quoted", 'Set the banner text to "Welcome back"', 'Set the banner text to "Welcome home"'),
    ("name", "Assign the ticket to Kim", "Assign the ticket to Lena"),
    ("polarity", "The cache is enabled", "The cache is not enabled"),
    ("order", "Split the traffic 80/20 between blue and green", "Split the traffic 20/80 between blue and green"),
    ("qualifier", "Archive the invoices older than a year", "Archive the unpaid invoices older than a year"),
    ("content", "Archive the invoices older than a year", "Print the invoices older than a year"),
    ("term", "Water the ferns twice a week", "Water the cacti twice a week"),
]


@pytest.mark.parametrize(("kind", "first", "second"), CASES)
def test_a_change_of_one_kind_is_named(comparator: Comparator, kind: str, first: str, second: str) -> None:
    result = comparator.compare(first, second)
    assert result.verdict is Verdict.CHANGED
    assert result.decided
    assert kind in kinds(result), [d.describe() for d in result.differences]


def test_every_kind_of_difference_has_its_own_case() -> None:
    assert sorted(kind for kind, _, _ in CASES) == sorted(DIFFERENCE_KINDS)


def test_a_number_written_as_a_word_is_the_same_value(comparator: Comparator) -> None:
    assert comparator.compare("The cluster has 6 worker nodes", "The cluster has six worker nodes").same


def test_a_duration_in_other_units_is_the_same_value(comparator: Comparator) -> None:
    assert comparator.compare("Rotate the keys every 2 hours", "Rotate the keys every 120 minutes").same


def test_the_passive_restates_the_active(comparator: Comparator) -> None:
    assert comparator.compare("Alice reviewed the design", "The design was reviewed by Alice").same


def test_a_short_form_of_a_name_is_the_same_word(comparator: Comparator) -> None:
    assert comparator.compare("We use PostgreSQL for billing", "We use Postgres for billing").same


def test_a_changed_number_keeps_its_unit_in_the_description(comparator: Comparator) -> None:
    result = comparator.compare("The quota is 100 requests per minute", "The quota is 200 requests per minute")
    assert [d.describe() for d in result.differences] == ["number: 100 requests per minute -> 200 requests per minute"]


def test_the_same_count_per_another_time_unit_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Allow 20 uploads per minute", "Allow 20 uploads per hour")
    assert result.verdict is Verdict.CHANGED and "number" in kinds(result)


def test_texts_about_unrelated_things_are_different(comparator: Comparator) -> None:
    result = comparator.compare("The invoices are emailed every Monday", "The sky is blue today")
    assert result.verdict is Verdict.DIFFERENT


def test_a_loose_rewording_is_left_undecided(comparator: Comparator) -> None:
    result = comparator.compare(
        "Compress the nightly log archive with gzip", "Shrink last night's logs into a gzip bundle"
    )
    assert not result.decided


def test_given_vectors_are_used_instead_of_embedding(comparator: Comparator, embedder: CachedEmbedder) -> None:
    va = embedder.embed_documents(["The cluster has 6 worker nodes"])[0]
    result = comparator.compare("The cluster has 6 worker nodes", "The cluster has six worker nodes", vectors=(va, va))
    assert result.similarity == pytest.approx(1.0, abs=1e-6)


def test_a_shared_word_is_no_abbreviation_of_an_added_one(comparator: Comparator) -> None:
    # "table" is in both texts; it must not also account for the added "tablets".
    result = comparator.compare("Sort the invoice table", "Please sort the invoice table for tablets")
    assert [d.describe() for d in result.differences] == ["qualifier: (none) -> tablets"]


def test_a_loose_rewording_sharing_one_word_is_not_same(comparator: Comparator) -> None:
    # Only "leaderboard" is shared and no value anchors the texts: a high cosine is not enough.
    assert not comparator.compare("Fix the leaderboard", "Please rename the leaderboard in the sidebar").same


def test_wordnet_synonyms_restate(comparator: Comparator) -> None:
    assert comparator.compare("Purchase two licences for the design team", "Buy two licences for the design team").same


def test_a_verb_troponym_does_the_same_action(comparator: Comparator) -> None:
    assert comparator.compare("Mail the signed contract to the lawyer", "Send the signed contract to the lawyer").same


def test_a_wordnet_antonym_is_a_polarity_change(comparator: Comparator) -> None:
    result = comparator.compare("Widen the margins of the printed report", "Narrow the margins of the printed report")
    assert kinds(result) == {"polarity"} and result.decided


def test_an_adjective_antonym_through_its_cluster_is_a_polarity_change(comparator: Comparator) -> None:
    result = comparator.compare("The garage door stays shut overnight", "The garage door stays open overnight")
    assert kinds(result) == {"polarity"}


def test_a_file_name_with_a_digit_in_its_extension_is_a_path(comparator: Comparator) -> None:
    result = comparator.compare("Convert lecture.mp4 to audio", "Convert seminar.mp4 to audio")
    assert kinds(result) == {"path"}


def test_a_substituted_noun_amid_shared_values_is_another_thing(comparator: Comparator) -> None:
    result = comparator.compare(
        "Forward payslips from hr@acme.io to me@home.io", "Forward photos from hr@acme.io to me@home.io"
    )
    assert result.decided and kinds(result) == {"term"}


def test_a_number_before_a_comma_does_not_count_the_next_word(comparator: Comparator) -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    reading = read("Keep 3, delete the rest")
    assert reading.slots[0].unit is None
    assert "delet" in {item.stem for item in reading.items}


def test_an_ordinal_used_as_an_adverb_is_no_number(comparator: Comparator) -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert not read("Back up the notes first").slots
    assert read("Pay the rent on the first of the month").slots[0].key == "#1"


def test_a_two_letter_abbreviation_with_dots_is_not_a_file_name() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert not [s for s in read("Use a hosted runner, e.g. a GitHub one").slots if s.kind == "path"]


def test_halving_and_cutting_by_half_are_the_same_factor(comparator: Comparator) -> None:
    result = comparator.compare("Halve the polling interval", "Cut the polling interval by half")
    assert "number" not in kinds(result)


def test_a_bare_count_restates_a_duration_of_that_count(comparator: Comparator) -> None:
    result = comparator.compare("Our cat Miso is 4 years old.", "Miso, our cat, is four.")
    assert "number" not in kinds(result)


def test_a_word_with_its_synonym_in_the_other_text_is_not_also_an_opposite(comparator: Comparator) -> None:
    result = comparator.compare("Fix the broken hinge on the gate", "The gate hinge is damaged, please repair it")
    assert "polarity" not in kinds(result)


def test_a_modifier_one_text_adds_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Mute the alarm chime", "Mute the backup alarm chime")
    assert not result.same and "qualifier" in kinds(result)


def test_a_subject_noun_one_statement_adds_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Invoice data is archived in Dublin.", "Invoice data exports are archived in Dublin.")
    assert not result.same


def test_a_negated_opposite_is_the_same_polarity(comparator: Comparator) -> None:
    result = comparator.compare(
        "Make the phone number mandatory at checkout", "At checkout the phone number is no longer optional"
    )
    assert "polarity" not in kinds(result)


def test_a_negated_synonym_is_a_polarity_change(comparator: Comparator) -> None:
    result = comparator.compare("Omar likes the weekly digest by text.", "Omar no longer wants the weekly digest.")
    assert result.verdict is Verdict.CHANGED and "polarity" in kinds(result)


def test_a_fraction_of_a_time_unit_is_a_duration(comparator: Comparator) -> None:
    result = comparator.compare("The cache is flushed every 30 minutes.", "Every half an hour the cache is flushed.")
    assert "number" not in kinds(result)


def test_every_other_is_every_second(comparator: Comparator) -> None:
    result = comparator.compare("Bins go out every other Tuesday.", "Bins go out every second Tuesday.")
    assert "number" not in kinds(result)


def test_a_pronoun_with_an_auxiliary_is_a_function_word() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [item.text for item in read("I'd say we're ready").items] == ["say", "ready"]


def test_a_left_over_verb_and_a_left_over_name_are_not_one_substituted_name(comparator: Comparator) -> None:
    result = comparator.compare("Add retries to the nightly export job", "Give the export job retries in Jenkins")
    assert ("name", "Add", "Jenkins") not in {(d.kind, d.old, d.new) for d in result.differences}
    assert ("qualifier", None, "Jenkins") in {(d.kind, d.old, d.new) for d in result.differences}


def test_a_place_one_request_adds_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Add the export button", "Please add the export button in the toolbar")
    assert not result.same and "qualifier" in kinds(result)


def test_a_participant_one_request_adds_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Add the export button", "Add the export button that auditors use")
    assert not result.same


def test_a_noun_heading_a_shared_phrase_frames_it(comparator: Comparator) -> None:
    result = comparator.compare("Stop the irrigation when it rains", "Stop the irrigation system when it rains")
    assert result.same, result.reason


def test_an_action_one_request_adds_is_a_change(comparator: Comparator) -> None:
    result = comparator.compare("Add the export button", "Add the export button, then deploy")
    assert not result.same


def test_a_hyphenated_name_with_a_one_letter_part_is_an_identifier(comparator: Comparator) -> None:
    result = comparator.compare("Reboot every node in rack-c tonight", "Reboot every node in rack-d tonight")
    assert not result.same and "identifier" in kinds(result)


def test_no_before_a_number_is_the_number_sign() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert read("Book room no. 12 for Friday").negations == 0


_VALUE_LIKE = st.text(alphabet=st.sampled_from(list("0123456789eExk.,-+/:%$#@'\" amptoinbyhalfover")), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.one_of(st.text(max_size=80), _VALUE_LIKE), b=st.one_of(st.text(max_size=80), _VALUE_LIKE))
def test_the_comparison_of_any_two_texts_never_raises(comparator: Comparator, a: str, b: str) -> None:
    result = comparator.judge(a, b, 0.7)
    assert result.verdict in set(Verdict)


def test_a_code_name_in_capitals_is_a_label_not_a_pronoun(comparator: Comparator) -> None:
    result = comparator.compare(
        "Reboot the AP-3 router in the lobby tonight", "Reboot the US-3 router in the lobby tonight"
    )
    assert result.verdict is Verdict.CHANGED
    assert "identifier" in kinds(result), result.reason


def test_an_english_word_spelled_within_a_longer_word_does_not_abbreviate_it(comparator: Comparator) -> None:
    # "plan" is a word of its own, not a shortening of "platoon"
    result = comparator.compare("Send the second platoon to the north gate", "Send the second plan to the north gate")
    assert not result.same, result.reason


def test_a_loose_rewording_that_brings_another_name_is_no_restatement(comparator: Comparator) -> None:
    older = "My vet is Dr. Moreau at the Hillside practice."
    newer = "Since Dr. Moreau retired my vet is Dr. Lindgren at the Oakfield veterinary practice."
    result = comparator.compare(older, newer)
    assert result.similarity >= 0.8  # a loose rewording the sentence model alone would call the same
    assert not result.same, result.reason


def test_a_fortnight_is_two_weeks(comparator: Comparator) -> None:
    result = comparator.compare("Keep the backups for a fortnight", "Keep the backups for two weeks")
    assert result.same, result.reason


def test_no_more_than_is_an_upper_bound_not_a_negation(comparator: Comparator) -> None:
    result = comparator.compare("Seat no more than 8 guests per table", "Seat at most 8 guests per table")
    assert result.same, result.reason


def test_an_hour_o_clock_is_a_time(comparator: Comparator) -> None:
    result = comparator.compare("Start the backup at 11 o'clock", "Start the backup at 11:00")
    assert result.same, result.reason


def test_a_day_past_twelve_over_a_month_is_a_date_and_a_split_stays_a_ratio(comparator: Comparator) -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert comparator.compare("The offer ends 28/2", "The offer ends 28 February").same
    assert [s.kind for s in read("Use an 80/20 split").slots] == ["number"]


def test_a_weekday_with_a_possessive_is_still_the_weekday() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    possessive = [(s.kind, s.key) for s in read("Cancel Sunday's rehearsal").slots]
    assert possessive == [(s.kind, s.key) for s in read("Cancel the rehearsal on Sunday").slots]
    assert possessive and possessive[0][0] == "date"


def test_older_than_a_duration_is_a_lower_bound_on_age(comparator: Comparator) -> None:
    result = comparator.compare("Archive tickets older than 60 days", "Archive tickets more than 60 days old")
    assert result.same, result.reason


def test_the_first_few_of_something_is_no_ordinal_count(comparator: Comparator) -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [s.key for s in read("Trim the first 8 seconds of demo.mp4").slots] == ["8s", "demo.mp4"]
    assert not comparator.compare("Trim the first 8 seconds of demo.mp4", "Trim the last 8 seconds of demo.mp4").same


def test_half_a_unit_without_an_article_is_a_duration(comparator: Comparator) -> None:
    assert comparator.compare("Poll the queue every half minute", "Poll the queue every 30 seconds").same


def test_a_leading_zero_does_not_change_an_integer(comparator: Comparator) -> None:
    assert comparator.compare("Export the grades of section 04", "Export the grades of section 4").same


def test_a_unit_and_a_half_is_one_duration(comparator: Comparator) -> None:
    assert comparator.compare("Fast-forward a minute and a half", "Fast-forward 90 seconds").same
    assert comparator.compare("Bake it for 2 and a half hours", "Bake it for 150 minutes").same


def test_a_range_ending_in_a_part_of_the_day_puts_its_start_there_too() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [s.key for s in read("Open the hall from 2 to 5 in the afternoon").slots] == ["14:00", "17:00"]


def test_a_word_negated_in_another_form_is_a_polarity_change(comparator: Comparator) -> None:
    result = comparator.compare(
        "Mail the lease to the tenant, signed", "Mail the lease to the tenant without a signature"
    )
    assert "polarity" in kinds(result), result.reason


def test_one_name_of_several_words_moving_to_another_value_is_no_swap(comparator: Comparator) -> None:
    result = comparator.compare(
        "Give Anna Berg a 4% raise from March 1", "Please process a 4% raise for Anna Berg from March 1"
    )
    assert "order" not in kinds(result), result.reason


def test_a_number_joined_to_its_unit_by_a_hyphen_carries_the_unit(comparator: Comparator) -> None:
    assert comparator.compare("Run a 45-minute fire drill", "Run a fire drill of 45 minutes").same


def test_noon_is_twelve_o_clock() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [(s.kind, s.key) for s in read("Lunch is served at noon").slots] == [("time", "12:00")]


def test_the_first_day_of_a_date_range_takes_the_month_of_its_end() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [s.key for s in read("Block the hall 11-13 March").slots] == [
        s.key for s in read("Block the hall from March 11 to March 13").slots
    ]


def test_twenty_four_seven_is_no_date() -> None:
    from amplifier_module_tool_agent_memory.compare.read import read

    assert [s.kind for s in read("Keep the hotline open 24/7").slots] != ["date"]
