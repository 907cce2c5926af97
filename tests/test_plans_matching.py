"""Specification of the plan-cache matching rule (own examples, independent of any data set)."""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.plans.matching import (
    MatchDecision,
    decide,
    match_similarity,
    normalise_prompt,
    signature,
)

HIGH = 0.9  # a cosine similarity comfortably above any threshold


def match(query: str, stored: str, similarity: float = HIGH, threshold: float = 0.85) -> MatchDecision:
    return decide(signature(query), signature(stored), similarity, threshold)


# -- normal form ----------------------------------------------------------------------


def test_normal_form_lowercases_collapses_spaces_and_strips_trailing_punctuation() -> None:
    assert normalise_prompt("  Rotate   the LOGO\tslowly!? ") == "rotate the logo slowly"


def test_normal_form_keeps_inner_punctuation() -> None:
    assert normalise_prompt("Fix Parser.parse() in utils.py.") == "fix parser.parse() in utils.py"


# -- similarity gate --------------------------------------------------------------------


def test_identical_prompt_text_is_a_hit_regardless_of_similarity() -> None:
    assert match("Archive old invoices.", "archive  old invoices", similarity=0.1).hit


def test_match_similarity_is_the_noisy_or_of_cosine_and_word_agreement() -> None:
    assert match_similarity(0.6, 0.5) == pytest.approx(1 - 0.4 * 0.5)
    assert match_similarity(0.9, 0.0) == pytest.approx(0.9)
    assert match_similarity(0.2, 1.0) == pytest.approx(1.0)


def test_word_agreement_is_the_share_of_content_words_the_other_prompt_accounts_for() -> None:
    # content words {nightly, log, file} vs {log, file} ("compress" is a direction word): 4 of 5 accounted for
    d = match("Compress the nightly log files", "Compress the log files", similarity=0.5)
    assert d.lexical == pytest.approx(4 / 5)
    assert d.similarity == pytest.approx(1 - 0.5 * (1 - 4 / 5))


def test_low_match_similarity_is_a_miss() -> None:
    # {archive} vs {archive, invoice, quarter}: agreement 2/4, so a cosine of 0.6 gives 0.8 < 0.85
    d = match("Archive", "Archive invoices quarterly", similarity=0.6)
    assert not d.hit
    assert d.reason.startswith("match similarity 0.80 < 0.85")


def test_default_threshold_is_0_85_on_the_match_similarity() -> None:
    # {archive, invoice} vs {archive, invoice, month}: agreement 4/5; cosine 0.24 gives 0.848, 0.26 gives 0.852
    assert not match("Archive invoices", "Archive invoices monthly", similarity=0.24).hit
    assert match("Archive invoices", "Archive invoices monthly", similarity=0.26).hit


def test_prompts_without_content_words_are_judged_by_cosine_alone() -> None:
    assert not match("Do it again", "Do that again", similarity=0.84).hit
    assert match("Do it again", "Do that again", similarity=0.86).hit


def test_a_veto_is_a_miss_whatever_the_cosine() -> None:
    d = match("Make the upload faster", "Make the upload slower", similarity=0.99)
    assert not d.hit
    assert d.cosine == 0.99


# -- rewordings are hits -------------------------------------------------------------------


def test_rewording_with_generic_request_verbs_is_a_hit() -> None:
    assert match("Please show a tooltip on the export button", "Add a tooltip on the export button").hit


def test_plural_and_inflection_do_not_matter() -> None:
    assert match("Sort the invoice tables by date", "sorting the invoice table by dates").hit


def test_synonym_of_a_common_word_is_a_hit() -> None:
    assert match("Make the upload quicker", "Make the upload faster").hit


def test_extra_detail_on_one_side_only_is_tolerated() -> None:
    assert match("Compress the nightly log files", "Compress the log files").hit


def test_abbreviation_of_a_word_is_a_hit() -> None:
    assert match("Bind the config reload to F5", "Bind the configuration reload to F5").hit


def test_compound_word_matches_its_parts() -> None:
    assert match("Show the timestamp of each message", "Show the time stamp of each message").hit


def test_acronym_matches_spelled_out_words() -> None:
    assert match("Fix the NPE in parseConfig", "Fix the null pointer exception in parseConfig").hit


def test_identifier_spelled_out_in_words_is_a_hit() -> None:
    assert match("fetchUser raises a TimeoutError, fix it", "Fix the timeout error in fetchUser").hit


# -- quantities --------------------------------------------------------------------------


def test_different_numbers_are_a_miss() -> None:
    d = match("Set the request timeout to 45 seconds", "Set the request timeout to 30 seconds")
    assert not d.hit
    assert d.reason == "numbers differ: 45s vs 30s"


def test_number_words_equal_digits() -> None:
    assert match("Retry failed uploads three times", "Retry failed uploads 3 times").hit


def test_durations_in_different_units_are_equal() -> None:
    assert match("Refresh the cache every 2 minutes", "Refresh the cache every 120 seconds").hit


def test_percent_equals_fraction_word() -> None:
    assert match("Set the window opacity to half", "Set the window opacity to 50%").hit


def test_multiplier_words_are_numbers() -> None:
    assert match("Make the buffer size twice as big", "Double the buffer size").hit
    assert not match("Halve the buffer size", "Double the buffer size").hit


def test_a_quantity_on_one_side_only_is_a_miss() -> None:
    d = match("Log out idle users", "Log out idle users after 10 minutes")
    assert not d.hit
    assert d.reason.startswith("numbers differ")


def test_double_after_an_article_is_a_noun_not_a_multiplier() -> None:
    assert signature("Open the file on a double click").numbers == frozenset()
    assert signature("Double the font size").numbers == frozenset({"2"})


# -- polarity ----------------------------------------------------------------------------


def test_enable_versus_disable_is_a_miss() -> None:
    d = match("Disable dark mode", "Enable dark mode")
    assert not d.hit
    assert d.reason.startswith("polarity differs: disable")


def test_add_versus_remove_is_a_miss() -> None:
    assert not match("Remove the search bar from the header", "Add a search bar to the header").hit


def test_stop_doing_is_the_opposite_of_doing() -> None:
    assert not match("Stop syncing contacts", "Sync contacts").hit


def test_take_away_is_a_negation() -> None:
    assert not match("Take away the admin rights of guests", "Give guests admin rights").hit


def test_un_prefix_reverses_a_verb() -> None:
    assert not match("Unlink the shared calendar", "Link the shared calendar").hit


def test_unmute_is_the_opposite_of_mute() -> None:
    assert signature("Unmute the notifications").negated is False
    assert not match("Unmute the notifications", "Mute the notifications").hit


# -- direction ---------------------------------------------------------------------------


def test_comparative_antonyms_are_a_miss() -> None:
    d = match("Make the sidebar narrower", "Make the sidebar wider")
    assert not d.hit
    assert d.reason == "direction differs: narrower vs wider"


def test_speed_antonyms_are_a_miss() -> None:
    assert not match("Make the carousel scroll slower", "Make the carousel scroll faster").hit


def test_position_antonyms_are_a_miss() -> None:
    assert not match("Move the logo to the left", "Move the logo to the right").hit
    assert not match("Pin the banner to the bottom", "Pin the banner to the top").hit


def test_increase_versus_decrease_is_a_miss() -> None:
    assert not match("Decrease the font size", "Increase the font size").hit


def test_save_versus_load_is_a_miss() -> None:
    assert not match("Load the user settings on exit", "Save the user settings on exit").hit


def test_same_direction_with_different_words_is_a_hit() -> None:
    assert match("Put the clock in the upper corner", "Put the clock in the top corner").hit


def test_direction_word_against_a_plain_word_is_a_substitution() -> None:
    assert not match("Add a tooltip to the save button", "Add a tooltip to the cancel button").hit


# -- objects and targets --------------------------------------------------------------------


def test_different_object_is_a_miss() -> None:
    d = match("Add a tooltip to the cancel button", "Add a tooltip to the submit button")
    assert not d.hit
    assert d.reason == "content words differ: cancel vs submit"


def test_different_attribute_is_a_miss() -> None:
    assert not match("Change the border color of the card to red", "Change the text color of the card to red").hit


def test_different_action_on_same_object_is_a_miss() -> None:
    assert not match("Encrypt the backup archive", "Upload the backup archive").hit


def test_different_identifier_is_a_miss() -> None:
    d = match("Fix the crash in PaymentService.cancelOrder", "Fix the crash in OrderService.cancelOrder")
    assert not d.hit
    assert d.reason.startswith("identifiers differ")


def test_swapped_identifiers_are_a_miss() -> None:
    d = match("Rename bazQux to fooBar in utils.py", "Rename fooBar to bazQux in utils.py")
    assert not d.hit
    assert d.reason.startswith("identifier order differs")


def test_moving_the_file_name_does_not_change_identifier_order() -> None:
    assert match("In utils.py rename fooBar to bazQux", "Rename fooBar to bazQux in utils.py").hit


@pytest.mark.parametrize(
    ("query", "stored"),
    [
        ("Send a weekly digest email", "Send a weekly digest email"),
        ("send a weekly digest e-mail", "Send a weekly digest email"),
    ],
)
def test_decision_reports_the_cosine_it_was_given(query: str, stored: str) -> None:
    d = decide(signature(query), signature(stored), 0.93)
    assert d.hit
    assert d.cosine == 0.93
    assert d.similarity == 1.0
