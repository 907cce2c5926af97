"""Recall's pure parts: the prompt's content words (names and function words left out), coverage, the gate,
the block within its budget, fitting the injection to the session's size limit, and what the query embedding
reads of a long prompt."""

from __future__ import annotations

from amplifier_module_tool_agent_memory.amplifier.recall_hooks import fit
from amplifier_module_tool_agent_memory.compare.lexicon import FUNCTION_WORDS
from amplifier_module_tool_agent_memory.config import RecallGateConfig
from amplifier_module_tool_agent_memory.memory.recall import (
    _FRAMING,
    _NOT_TOPICAL,
    Signals,
    _stems,
    content_words,
    coverage,
    embedding_text,
    passes,
    render_block,
    topic_words,
)
from amplifier_module_tool_agent_memory.tokens import count_tokens


def test_names_and_function_words_are_not_content_words() -> None:
    assert content_words("When did Caroline go to the LGBTQ support group?") == ["lgbtq", "support", "group"]
    assert content_words("What did Melanie's kids paint?") == ["kid", "paint"]
    # a capitalised first word is a name only when the prompt writes it capitalised elsewhere too
    assert content_words("Painting is what Jon likes") == ["paint"]
    assert content_words("Jon asked: when did Jon start painting?") == ["start", "paint"]
    assert content_words("What did Caroline and Melanie do?") == []
    assert content_words("Why does the CI fail in BillingService?") == ["ci", "fail", "billingservic"]


def test_content_words_and_topic_words_drop_the_same_words() -> None:
    # One set serves both lists: every function and framing word, and nothing else but one-letter words.
    assert _NOT_TOPICAL == FUNCTION_WORDS | _FRAMING
    prompt = "tell me what x the pottery class remember about painting"
    assert topic_words(prompt) == ["pottery", "class", "painting"]
    assert content_words(prompt) == ["potteri", "class", "paint"]
    for word in sorted(_NOT_TOPICAL):
        assert topic_words(f"{word} pottery") == ["pottery"] and content_words(f"{word} pottery") == ["potteri"]


def test_every_sentence_end_starts_a_sentence_and_only_a_capital_then_lower_case_is_a_name() -> None:
    # ; and a new line end a sentence too: a capitalised word after them is a name only if written so elsewhere
    assert content_words("Painting; Painting is fun\nGardening too") == ["paint", "fun", "garden"]
    assert content_words("Tell me: Cooking matters. Cooking, baking!") == ["cook", "matter", "bake"]
    # "Ab1" is written as a name; "A1" (nothing lower case after the capital) and "ABc" are terms
    assert content_words("A1 b2 Ab1 Ab ABc 42 x") == ["a1", "b2", "abc", "42"]


def test_a_memorys_stems_are_cached_by_its_text_and_cannot_be_changed() -> None:
    text = "Melanie: I signed up for a pottery class yesterday!"
    first = _stems(text)
    assert _stems(text) is first and {"sign", "potteri", "class"} <= first
    assert isinstance(first, frozenset)  # shared by every recall that reads this text: nobody may add to it
    assert "class" not in _stems(text.replace("class", "course"))  # an edited memory is stemmed anew


def test_coverage_counts_content_words_by_stem() -> None:
    words = content_words("Which pottery classes did she sign up for?")
    assert coverage(words, "Melanie: I signed up for a pottery class yesterday!") == 1.0
    assert coverage(words, "Melanie: I went camping with the kids.") == 0.0
    assert coverage([], "anything") == 0.0


def test_the_gate_needs_one_memory_relevant_enough_and_a_content_word() -> None:
    gate = RecallGateConfig()
    assert passes(Signals(3, relevance=gate.min_relevance), gate)
    assert not passes(Signals(3, relevance=gate.min_relevance - 0.01), gate)
    assert not passes(Signals(0, relevance=5.0), gate)


def _memory(n: int, content: str = "a remark about the clinic") -> dict[str, object]:
    return {"id": f"00000000-0000-0000-0000-{n:012d}", "kind": "fact", "date": "2026-11-24", "content": content}


def test_the_block_shows_full_ids_and_stays_within_its_budget() -> None:
    memories = [_memory(n, "word " * 30) for n in range(20)]
    text, ids = render_block("agent-memory-recall", "intro", memories, 200)
    assert count_tokens(text) <= 200
    assert 0 < len(ids) < 20
    assert all(f"[{i}]" in text for i in ids)
    assert text.startswith("<agent-memory-recall>\nintro\n") and text.endswith("</agent-memory-recall>")


def test_a_long_memory_is_shortened_not_dropped() -> None:
    text, ids = render_block("t", "intro", [_memory(1, "long " * 500)], 100)
    assert ids == ["00000000-0000-0000-0000-000000000001"]
    assert "\u2026" in text and count_tokens(text) <= 100


def test_a_superseded_memory_is_marked() -> None:
    older = {**_memory(1), "superseded_by": "00000000-0000-0000-0000-000000000002"}
    text, _ = render_block("t", "intro", [older], 100)
    assert "(fact, 2026-11-24, superseded by 00000000-0000-0000-0000-000000000002)" in text


def test_fitting_drops_whole_lines_from_the_end() -> None:
    briefing, _ = render_block("b", "intro", [_memory(n) for n in range(3)], 300)
    recall, _ = render_block("r", "intro", [_memory(n) for n in range(3, 9)], 300)
    whole = fit([briefing, recall], None)
    assert whole == f"{briefing}\n\n{recall}"
    for limit in (len(whole) - 1, len(briefing) + 60, len(briefing), 150, 40):
        fitted = fit([briefing, recall], limit)
        assert len(fitted) <= limit
        for line in fitted.splitlines():  # only whole lines, every block closed
            assert line in whole.splitlines()
        assert fitted.count("<b>") == fitted.count("</b>") and fitted.count("<r>") == fitted.count("</r>")
    assert fit([briefing, recall], 10) == ""


def test_the_query_embedding_reads_a_prompts_first_topic_words_only() -> None:
    question = "When did Caroline go to the LGBTQ support group?"
    # function words out, the name and the acronym kept, in the prompt's order
    assert embedding_text(question, 16) == "Caroline LGBTQ support group"
    assert embedding_text("What did you tell me about Melanie's pottery class?", 16) == "Melanie pottery class"
    long_prompt = " ".join(f"w{i}" for i in range(60))
    assert embedding_text(long_prompt, 6) == " ".join(f"w{i}" for i in range(6))
    assert embedding_text("what is it that you did?", 6) == "what is it that you did?"  # nothing but function words
    assert embedding_text(long_prompt, 0) == long_prompt  # 0: the whole prompt
