"""General English lexical resources the comparison reads: nothing here is about a topic.

Function words (articles, pronouns, prepositions, auxiliaries, request framing), negators,
number words, ordinals, time units, months and weekdays, basic colour terms and the
markers of the roles ``from -> to``. These are closed classes of the language (or, for
time units and colours, standard units and the Berlin-Kay basic colour terms); the
comparison's knowledge of open-class words comes from a stemmer and WordNet (see ``wordnet.py``).
"""

from __future__ import annotations

__all__ = [
    "ABBREVIATIONS",
    "CHANGE_ADVERBS",
    "COLOURS",
    "FRACTIONS",
    "FUNCTION_WORDS",
    "MONTHS",
    "MULTIPLIERS",
    "NEGATORS",
    "NOUN_DETERMINERS",
    "NUMBER_WORDS",
    "ORDINALS",
    "TIME_UNITS",
    "WEEKDAYS",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_WORDS = _words(
    """
    a an the this that these those it its itself they them their theirs themselves there here
    i me my mine myself we us our ours you your yours he him his she her hers one ones someone
    anyone everyone anything everything something
    is are was were be been being am do does did done doing have has had having
    will would shall should can could may might must need needs ought
    please pls plz kindly just also so too very really quite rather bit
    and or but nor if then than as of to in on at by for from with within without via into onto
    about per across around through throughout toward towards upon over under up down off out
    what which who whom whose when whenever where wherever while how why whether
    all any each every some such both either neither own same other another
    most more less least few fewer many much several
    not no never
    now currently again still already always ever instead ok okay yes
    u ur w
    use uses used using change changes changed changing let lets make makes made making
    create creates created creating
    get gets got getting go goes going went gone
    put puts putting set sets setting take takes took taken taking give gives gave given giving
    """
)
"""Closed-class words and light verbs ("make", "set", "get", "let"...) that frame a request."""


CHANGE_ADVERBS: tuple[tuple[str, ...], ...] = (
    ("now",), ("anymore",), ("instead",), ("nowadays",), ("henceforth",), ("lately",), ("recently",),
    ("no", "longer"), ("these", "days"), ("from", "now", "on"), ("from", "here", "on"), ("from", "today",),
    ("going", "forward"), ("moving", "forward"), ("as", "of"), ("starting",), ("effective",), ("actually",),
)
"""Adverbs and phrases of time that announce a change of state ("I now see Dr. Lindqvist", "these days I'd
rather ...", "an Airbnb instead", "starting in April"), or a correction ("is actually due in August"): the
statement replaces an earlier one."""

ABBREVIATIONS = _words(
    "dr mr mrs ms mx prof st sr jr mt ft vs etc eg ie no nos approx dept est inc ltd co corp jan feb mar apr jun "
    "jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun"
)
"""Abbreviations English writes with a full stop inside a sentence ("Dr. Patel", "St. Mary's", "no. 5")."""

NOUN_DETERMINERS = _words("a an the this that these those my our your his her their its")
"""Articles, demonstratives and possessives: they pick a thing out, they do not name it ("my steak" and
"their steak" say the same of a steak), and the word after one belongs to a noun phrase."""

NEGATORS = _words("not no never without nor none nothing nobody neither cannot can't don't doesn't "
                  "isn't aren't wasn't weren't won't shouldn't mustn't didn't hasn't haven't n't")
"""Grammatical negation: each applies to the item right after it ("not enabled")."""


NUMBER_WORDS: dict[str, float] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000, "dozen": 12,
}
"""Cardinal number words (compounds such as "twenty-five" are summed by the reader)."""

MULTIPLIERS: dict[str, str] = {
    "twice": "2", "thrice": "3", "double": "2", "doubled": "2", "doubles": "2", "triple": "3", "tripled": "3",
    "triples": "3", "quadruple": "4", "half": "0.5", "halve": "0.5", "halved": "0.5", "halves": "0.5",
}
"""Words that are a factor, like "2x": "twice as high", "double the damage", "halve the rate" / "by half"."""

FRACTIONS: dict[str, float] = {"half": 0.5, "quarter": 0.25}
"""Fraction words that make a duration of a time unit ("half an hour", "a quarter of an hour")."""

ORDINALS: dict[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10,
}
"""Ordinal words ("second" is also a time unit: a number right before it makes it the unit)."""

TIME_UNITS: dict[str, float] = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "week": 604800.0, "weeks": 604800.0, "wk": 604800.0, "fortnight": 1209600.0, "fortnights": 1209600.0,
    "month": 2592000.0, "months": 2592000.0, "year": 31536000.0, "years": 31536000.0, "yr": 31536000.0,
}
"""Units of duration in seconds: "5 minutes" and "300 seconds" are one value."""

MONTHS: dict[str, int] = {
    name: i + 1
    for i, names in enumerate(
        ("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
         "august aug", "september sep sept", "october oct", "november nov", "december dec")
    )
    for name in names.split()
}
WEEKDAYS: dict[str, int] = {
    name: i
    for i, names in enumerate(
        ("monday mon mondays", "tuesday tue tues tuesdays", "wednesday wed wednesdays", "thursday thu thurs thursdays",
         "friday fri fridays", "saturday sat saturdays", "sunday sun sundays")
    )
    for name in names.split()
}

COLOURS = _words("black white red green yellow blue brown orange pink purple grey gray violet cyan magenta")
"""The basic colour terms of English (Berlin and Kay): a colour named by one of them is a value."""

