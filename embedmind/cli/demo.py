"""``embedmind demo``: remember a small multi-session conversation, then ask it questions.

The conversation is the project's own: two friends, Maya and Leo, over three
sessions in spring 2026. Each turn is remembered with its speaker, session
and date; the questions below are answered by recall alone.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from collections.abc import Callable

from embedmind.model import Draft, Tier
from embedmind.store import Store

_UTC = _dt.timezone.utc
SESSIONS: list[tuple[str, _dt.datetime, list[tuple[str, str]]]] = [
    (
        "session-1",
        _dt.datetime(2026, 3, 2, 18, 30, tzinfo=_UTC),
        [
            (
                "Maya",
                "I finally adopted a dog last weekend, a three-year-old beagle named Biscuit.",
            ),
            ("Leo", "Congratulations! How is Biscuit settling in at your flat?"),
            ("Maya", "He howls at the neighbours' cat, but he loves the park by the river."),
            ("Leo", "I started learning the cello in January; my teacher is very strict."),
            ("Maya", "You always wanted to play an instrument. Do you practise every day?"),
            ("Leo", "Thirty minutes each morning before work, mostly scales and Bach."),
            ("Maya", "My sister Ana is visiting from Lisbon in April, I can't wait."),
            ("Leo", "Take her to that Peruvian restaurant on Elm Street, the ceviche is great."),
        ],
    ),
    (
        "session-2",
        _dt.datetime(2026, 4, 14, 20, 5, tzinfo=_UTC),
        [
            ("Maya", "Ana loved the ceviche! We went twice during her visit."),
            ("Leo", "Told you. Did Biscuit get along with her?"),
            ("Maya", "He slept on her suitcase every night, so yes."),
            ("Leo", "I have my first cello recital on May 20th at the community hall."),
            ("Maya", "I'll be there. Are you nervous about playing in public?"),
            ("Leo", "Terrified. I'm playing the prelude from Bach's first cello suite."),
            (
                "Maya",
                "I changed jobs, by the way: I'm now a data engineer at a solar energy startup.",
            ),
            ("Leo", "That fits you. Is the commute better than before?"),
            ("Maya", "Much better, I cycle there in fifteen minutes along the river."),
        ],
    ),
    (
        "session-3",
        _dt.datetime(2026, 5, 21, 9, 15, tzinfo=_UTC),
        [
            ("Maya", "Your recital last night was wonderful, the Bach prelude gave me chills."),
            ("Leo", "Thank you for coming! My hands were shaking the whole time."),
            ("Maya", "Biscuit has a vet appointment on Friday for his vaccinations."),
            ("Leo", "I'm planning a hiking trip to the Dolomites in August. Want to join?"),
            ("Maya", "I'd love to, but I'm allergic to bee stings, so I need to pack my EpiPen."),
            ("Leo", "Good to know. I'll book the mountain hut near Cortina for four nights."),
            ("Maya", "Can dogs come to the hut? I don't want to leave Biscuit with a sitter."),
            ("Leo", "I'll ask them; some huts in the Dolomites accept dogs."),
        ],
    ),
]

QUESTIONS = [
    "What kind of dog did Maya adopt?",
    "Which instrument is Leo learning?",
    "Where is Maya's sister from?",
    "When is Leo's recital?",
    "What is Maya's new job?",
    "Is Maya allergic to anything?",
    "Where is the hiking trip?",
]


def drafts() -> list[Draft]:
    """The conversation as drafts: one episodic memory per turn."""
    out = []
    for session, start, turns in SESSIONS:
        for i, (speaker, text) in enumerate(turns):
            out.append(
                Draft(
                    f"{speaker}: {text}",
                    id=f"{session}/turn-{i + 1:02d}",
                    namespace="demo/maya-and-leo",
                    metadata={"speaker": speaker, "session": session},
                    tier=Tier.EPISODIC,
                    agent="demo",
                    session_id=session,
                    created_at=start + _dt.timedelta(minutes=2 * i),
                )
            )
    return out


def run(store: Store, write: Callable[[str], None], k: int = 2) -> None:
    """Remember the conversation in ``store`` and print recall for each question."""
    memories = store.remember_many(drafts())
    write(f"Remembered {len(memories)} turns from {len(SESSIONS)} sessions in {store.path}\n")
    for question in QUESTIONS:
        result = store.recall(question, k=k, namespace="demo/maya-and-leo")
        channels = "+".join(result.channels)
        write(f"\nQ: {question}   [{result.mode.value} recall via {channels}]\n")
        for hit in result:
            when = hit.memory.created_at.strftime("%Y-%m-%d")
            write(f"  {hit.rank}. ({hit.score:.4f}, {when}) {hit.memory.content}\n")
    for note in result.degraded:
        write(f"\nnote: {note}\n")
    speaker = store.recall("dog", k=3, where={"speaker": "Leo"}, mode="text")
    write("\nFiltered: what did Leo say about dogs?  where={'speaker': 'Leo'}\n")
    for hit in speaker:
        write(f"  {hit.rank}. {hit.memory.content}\n")


def command(store: Store, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """``embedmind demo``: :func:`run` on the CLI's store (``:memory:`` unless ``--store``)."""
    del args
    run(store, lambda text: out(text.rstrip("\n")))
    return 0
