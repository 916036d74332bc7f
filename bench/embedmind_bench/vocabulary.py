"""Word lists and the deterministic vocabulary of the synthetic chat corpus.

The lists below are real English words, ordered roughly from common to less
common inside each part of speech, because the rank of a word decides its
Zipf frequency. Verbs and nouns are inflected (plural, ``-ing``, ``-ed``) so
that stemmers have real work to do, and a seeded generator adds names,
numbers and a long tail of rare pseudo-words, the way real chat logs carry
product codes, nicknames and typos.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


def _words(text: str) -> tuple[str, ...]:
    """Split a whitespace-separated word list written as one string."""
    return tuple(text.split())


FUNCTION_WORDS: tuple[str, ...] = _words(
    """
    the i to and a you it of that is in we my was for me so on have but be
    this just not with do at what are they he like can if all about she as
    or get there one know from think then an out up will would your really
    when our no how yeah did his her them been had some were going now
    because more also very too much got here which who us well by could
    their where should than over after into still maybe off even these
    those any other only back again why something anything everything
    nothing someone anyone everyone always never sometimes often already
    yet though while before until since during without between through
    under around both each few most many such own same another every either
    neither whether however although unless whose whom this that there here
    soon later today tomorrow yesterday tonight ago once twice almost quite
    rather pretty actually probably definitely honestly basically literally
    okay oh hey thanks please sorry sure yes right
    """
)

QUESTION_WORDS: tuple[str, ...] = _words(
    """
    what when where who why how which did does do is was can could have has
    """
)

NOUNS: tuple[str, ...] = _words(
    """
    time day work thing way people year week friend home house job family
    kid mom dad night morning weekend school game book movie show car dog
    cat food dinner lunch breakfast coffee tea trip place city town phone
    money idea plan project team meeting call email message party birthday
    weather rain summer winter spring fall beach park garden kitchen room
    office boss client doctor teacher student class exam test paper story
    music song band concert ticket flight hotel airport train bus bike road
    street store shop market restaurant bar cafe gym run walk hike mountain
    lake river ocean island country trip vacation holiday picture photo
    camera video computer laptop screen app website code bug feature
    release server database problem question answer reason mistake decision
    chance change choice goal dream hobby painting drawing guitar piano
    lesson course degree career interview salary rent apartment neighbor
    brother sister son daughter husband wife partner baby grandma grandpa
    uncle aunt cousin wedding anniversary gift present card letter package
    delivery order recipe cake cookie bread pasta pizza salad soup chicken
    fish rice cheese fruit apple banana orange vegetable garden flower tree
    plant seed grass snow sun moon star sky cloud wind storm fire water ice
    coast forest desert valley bridge tower museum gallery theater stadium
    church library hospital clinic pharmacy bank insurance tax bill budget
    account loan price cost deal sale discount receipt invoice contract
    lawyer court police accident injury pain headache fever cold flu
    medicine appointment surgery therapy diet workout marathon race match
    score season league coach player fan jersey shoe shirt jacket dress hat
    bag wallet key watch ring necklace glasses umbrella blanket pillow
    couch bed desk chair table lamp window door wall floor roof yard fence
    garage basement attic stairs paint tool hammer nail screw drill ladder
    box shelf closet mirror clock battery charger cable printer keyboard
    mouse speaker headphone podcast episode series channel stream news
    article blog post comment review rating survey report presentation
    slide spreadsheet document file folder password account profile photo
    album memory moment feeling mood stress anxiety energy sleep dream nap
    habit routine schedule calendar deadline reminder note list goal
    resolution budget saving investment stock crypto election vote policy
    law government history science math physics chemistry biology language
    spanish french german japanese chinese art poem novel author chapter
    library volunteer charity donation community festival parade fireworks
    camping tent backpack map compass trail
    """
)

VERBS: tuple[str, ...] = _words(
    """
    go say get make know think take see come want look use find give tell
    work call try ask need feel leave put mean keep let begin seem help
    talk turn start show hear play run move like live believe hold bring
    happen write provide sit stand lose pay meet include continue set learn
    change lead understand watch follow stop create speak read allow add
    spend grow open walk win offer remember love consider appear buy wait
    serve die send expect build stay fall cut reach kill remain suggest
    raise pass sell require report decide pull return explain hope develop
    carry break receive agree support hit produce eat cover catch draw
    choose cause point listen realize plan visit cook bake clean wash fix
    paint drive fly travel swim climb dance sing laugh cry sleep rest relax
    study practice finish celebrate invite join share post text email
    upload download install update delete save book cancel order ship pack
    move rent borrow lend forget worry enjoy hate prefer miss notice guess
    wonder imagine apologize complain argue recommend mention describe
    discuss compare prepare organize schedule manage train coach teach
    graduate apply hire quit retire adopt marry date propose hug kiss bike
    hike jog stretch recover
    """
)

ADJECTIVES: tuple[str, ...] = _words(
    """
    good new great little big old long high different small large next
    early young important few public bad same able last late hard major
    better best free sure real full special easy clear recent certain
    personal open red difficult available likely short single medical
    current wrong private past foreign fine common poor natural significant
    similar hot dead central happy serious ready simple left physical
    general environmental financial blue democratic dark various entire
    close legal religious cold final main green nice huge popular
    traditional cultural busy tired excited nervous worried proud angry sad
    funny weird crazy amazing awesome terrible awful lovely beautiful cute
    delicious healthy sick quiet loud cheap expensive fancy cozy warm cool
    fresh spicy sweet bitter sour crowded empty lonely grateful curious
    careful lucky boring interesting favorite fun brilliant gorgeous
    """
)

NAMES: tuple[str, ...] = _words(
    """
    john mary james sarah michael emma david olivia daniel sophia matthew
    isabella andrew mia joshua charlotte ryan amelia nathan harper tyler
    evelyn kevin abigail brandon emily justin ella jason grace aaron chloe
    adam lily kyle zoe eric hannah ethan nora lucas leah mason maya logan
    aria caleb ruby owen stella dylan hazel luke violet jack aurora henry
    ivy leo alice oscar julia felix clara hugo elena mateo sofia diego
    lucia carlos ana luis marta pedro ines raj priya arjun ananya wei mei
    hiroshi yuki kenji aiko omar layla ahmed fatima ali noor tomas anya
    ivan olga dmitri katya lars ingrid sven astrid pierre camille melanie
    caroline jon gina joanna nate tim audrey deborah evan paris london
    tokyo berlin rome madrid boston chicago seattle denver austin miami
    toronto sydney dublin lisbon prague vienna oslo seoul
    """
)

SYLLABLES: tuple[str, ...] = _words(
    """
    ka ro mi te lu sa no vi da ze po ri fa gu ne bo li ta xe qu zo mu ve ri
    ko an el is ur om ex yl ar en or ix tra pli sko bre vol gan mor
    """
)

IRREGULAR_PAST: dict[str, str] = dict(
    pair.split(":")
    for pair in _words(
        """
    go:went say:said get:got make:made know:knew think:thought take:took
    see:saw come:came give:gave tell:told feel:felt leave:left put:put
    mean:meant keep:kept let:let begin:began hold:held bring:brought
    write:wrote sit:sat stand:stood lose:lost pay:paid meet:met set:set
    lead:led understand:understood speak:spoke read:read spend:spent
    grow:grew win:won buy:bought send:sent build:built fall:fell cut:cut
    break:broke catch:caught draw:drew choose:chose drive:drove fly:flew
    swim:swam sing:sang sleep:slept teach:taught forget:forgot lend:lent
    hit:hit run:ran eat:ate quit:quit sell:sold hear:heard find:found
    """
    )
)

# A Zipf-Mandelbrot law p(r) ∝ (r + q)^-s fits English word frequencies
# with s ≈ 1.07 and q ≈ 2.7 (Piantadosi 2014); beyond a few thousand ranks
# the law steepens to s ≈ 2 (Ferrer i Cancho and Solé 2001). Our real word
# lists end near rank 2,000, so the steeper regime starts there.
ZIPF_EXPONENT = 1.07
ZIPF_OFFSET = 2.7
TAIL_RANK = 2_000
TAIL_EXPONENT = 2.0


@dataclass(frozen=True)
class Vocabulary:
    """Ranked word lists and their Zipf sampling tables.

    Function and content words share one Zipf ranking (function words
    take most top ranks, as in real text); the two tables below are that
    law conditioned on each kind, so drawing a function word with
    probability ``function_share`` and a content word otherwise is exactly
    drawing from the whole law.

    Attributes:
        function_words: Function words, most frequent first.
        content_words: Content words (inflected forms, names, numbers and
            rare pseudo-words), most frequent first.
        function_cdf: Cumulative probabilities over ``function_words``.
        content_cdf: Cumulative probabilities over ``content_words``.
        function_share: Total probability of the function words.
    """

    function_words: np.ndarray
    content_words: np.ndarray
    function_cdf: np.ndarray
    content_cdf: np.ndarray
    function_share: float


def zipf_weights(n: int) -> np.ndarray:
    """Return the two-regime Zipf-Mandelbrot law over ranks ``1..n``, normalised.

    Args:
        n: Number of ranks.

    Returns:
        A float64 array of length ``n`` summing to 1, non-increasing.
    """
    ranks = np.arange(1, n + 1, dtype=np.float64)
    weights = (ranks + ZIPF_OFFSET) ** -ZIPF_EXPONENT
    tail = ranks > TAIL_RANK
    # Continuous at the knee: the tail starts from the head's last weight.
    knee = (TAIL_RANK + ZIPF_OFFSET) ** -ZIPF_EXPONENT
    weights[tail] = knee * (ranks[tail] / TAIL_RANK) ** -TAIL_EXPONENT
    normalised: np.ndarray = weights / weights.sum()
    return normalised


def _cdf(weights: np.ndarray) -> np.ndarray:
    """Return the normalised cumulative sum of ``weights``, ending at 1.0."""
    cdf = np.cumsum(weights)
    normalised: np.ndarray = cdf / cdf[-1]
    return normalised


def inflect(word: str, suffix: str) -> str:
    """Attach an English suffix with the commonest spelling rules.

    Args:
        word: A base form, e.g. ``"bake"``.
        suffix: One of ``"s"``, ``"ing"`` or ``"ed"``.

    Returns:
        The inflected form, e.g. ``"baking"``.
    """
    if suffix == "ed" and word in IRREGULAR_PAST:
        return IRREGULAR_PAST[word]
    if suffix == "s":
        if word.endswith(("s", "sh", "ch", "x", "z")):
            return word + "es"
        if word.endswith("y") and word[-2:-1] not in "aeiou":
            return word[:-1] + "ies"
        return word + "s"
    if word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    elif word.endswith("y") and suffix == "ed" and word[-2:-1] not in "aeiou":
        word = word[:-1] + "i"
    return word + suffix


def pseudo_words(rng: np.random.Generator, count: int) -> list[str]:
    """Draw pronounceable rare tokens of two to four syllables each.

    Args:
        rng: The generator to draw from.
        count: How many tokens to draw.

    Returns:
        Lower-case words that are almost never real English words.
    """
    lengths = rng.integers(2, 5, size=count)
    picks = rng.integers(0, len(SYLLABLES), size=(count, 4))
    return [
        "".join(SYLLABLES[i] for i in row[:n])
        for row, n in zip(picks.tolist(), lengths.tolist(), strict=True)
    ]


def _numbers() -> list[str]:
    """Return the number tokens that chat turns mention: counts, years, times."""
    small = [str(i) for i in range(1, 101)]
    years = [str(y) for y in range(1990, 2031)]
    times = [f"{h}{m}" for h in range(1, 13) for m in ("am", "pm")]
    return small + years + times


def _dedupe(words: list[str]) -> list[str]:
    """Drop repeated words, keeping the first (most frequent) rank of each."""
    return list(dict.fromkeys(words))


def _interleave(*lists: tuple[str, ...]) -> list[str]:
    """Merge ranked lists round-robin so the top ranks mix parts of speech."""
    longest = max(len(words) for words in lists)
    return [words[i] for i in range(longest) for words in lists if i < len(words)]


def _inflections() -> list[str]:
    """Return plural nouns and the ``-s``/``-ing``/``-ed`` forms of verbs."""
    forms = [inflect(noun, "s") for noun in NOUNS]
    forms += [inflect(verb, suffix) for verb in VERBS for suffix in ("s", "ing", "ed")]
    return forms


def _rank_content(rng: np.random.Generator, rare_types: int) -> list[str]:
    """Lay out content words by rank: core words, then a seeded mix, then rare ones."""
    core = _dedupe(_interleave(NOUNS, VERBS, ADJECTIVES))
    middle = _inflections() + list(NAMES) + _numbers()
    middle = [middle[int(i)] for i in rng.permutation(len(middle))]
    # The 150 commonest content words stay on top; below them a base form
    # is picked 40 % of the time so inflections and names reach mid ranks.
    ranked, head, tail = core[:150], core[150:], middle
    while head or tail:
        source = head if head and (not tail or rng.random() < 0.4) else tail
        ranked.append(source.pop(0))
    # Words like "like" or "back" are function words first: keep them once.
    ranked = [word for word in _dedupe(ranked) if word not in FUNCTION_WORDS]
    known = set(ranked) | set(FUNCTION_WORDS)
    target = len(ranked) + rare_types
    while len(ranked) < target:
        for word in pseudo_words(rng, target - len(ranked)):
            if word not in known:
                known.add(word)
                ranked.append(word)
    return ranked


def _merge_ranks(
    rng: np.random.Generator, function_words: list[str], content_words: list[str]
) -> np.ndarray:
    """Return, per combined rank, whether a function word holds it.

    The 50 commonest words are all function words; below them function and
    content words alternate at random until the function words run out,
    which puts "time" and "day" near rank 100, as in English frequency lists.
    """
    total = len(function_words) + len(content_words)
    is_function = np.zeros(total, dtype=bool)
    is_function[:50] = True
    rest = len(function_words) - 50
    window = 2 * rest
    is_function[50 + rng.choice(window, size=rest, replace=False)] = True
    return is_function


@functools.lru_cache(maxsize=4)
def build_vocabulary(seed: int, rare_types: int = 30_000) -> Vocabulary:
    """Build the ranked vocabulary for ``seed``; equal seeds give equal vocabularies.

    Args:
        seed: Seed of the generator that orders the mid ranks and draws the
            rare pseudo-words.
        rare_types: How many rare pseudo-words form the long tail.

    Returns:
        The vocabulary with its Zipf sampling tables.

    Example:
        >>> vocab = build_vocabulary(7, rare_types=100)
        >>> str(vocab.function_words[0]), 0.4 < vocab.function_share < 0.7
        ('the', True)
    """
    rng = np.random.default_rng([seed, 0x766F63])  # "voc": a stream of its own
    function_words = _dedupe(list(FUNCTION_WORDS))
    content_words = _rank_content(rng, rare_types)
    is_function = _merge_ranks(rng, function_words, content_words)
    weights = zipf_weights(is_function.size)
    return Vocabulary(
        function_words=np.array(function_words, dtype=object),
        content_words=np.array(content_words, dtype=object),
        function_cdf=_cdf(weights[is_function]),
        content_cdf=_cdf(weights[~is_function]),
        function_share=float(weights[is_function].sum()),
    )
