"""LoCoMo data and scoring, exactly as the data's README says.

Documents: one memory per dialog turn, id = its ``dia_id``, content =
``"<speaker>: <text>"`` plus the image caption when the turn has one,
``created_at`` = the session's date (plus the turn's position in seconds, so
the dialog order is the time order), ``session_id`` = ``"<conversation>:<n>"``
(e.g. ``conv-26:3``); each conversation in its own namespace; the turns are
written in dialog order, as a chat application stores its history.
Questions: every ``qa`` item outside category 5 with evidence; evidence ids
are stripped of spaces and ids naming no turn dropped; a question left with no
evidence is skipped (and counted). ``recall@k`` is the mean share of evidence
turns in the top k; ``hit@k`` the share of questions with at least one.
Categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.

The data set is CC BY-NC evaluation data: it is read from ``../shared`` at run
time and never shipped with the package.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedmind.model import Draft, Tier
from embedmind.store import Store
from embedmind_bench.metrics import hit_at_k, recall_at_k

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
_UTC = _dt.timezone.utc


@dataclass(frozen=True)
class Question:
    """One scored question."""

    namespace: str
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Dataset:
    """Turns (as drafts) and questions of every conversation."""

    drafts: list[Draft] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped: int = 0


def _session_date(text: str) -> _dt.datetime:
    return _dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=_UTC)


def load(path: Path) -> Dataset:
    """Read ``locomo-dev.json`` into drafts and questions.

    Args:
        path: The data file.

    Returns:
        One draft per dialog turn and the scored questions, with the count
        of questions skipped for lack of valid evidence.
    """
    data = Dataset()
    for sample in json.loads(path.read_text()):
        namespace = f"locomo/{sample['sample_id']}"
        turn_ids = set()
        conversation = sample["conversation"]
        sessions = [
            (key, turns)
            for key, turns in conversation.items()
            if key.startswith("session_") and isinstance(turns, list)
        ]
        # Dialog order: by session number (the file's key order is not a contract).
        for key, turns in sorted(sessions, key=lambda pair: int(pair[0].removeprefix("session_"))):
            when = _session_date(conversation[f"{key}_date_time"])
            for position, turn in enumerate(turns):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" {turn['blip_caption']}"
                turn_ids.add(turn["dia_id"])
                data.drafts.append(
                    Draft(
                        text,
                        id=f"{sample['sample_id']}/{turn['dia_id']}",
                        namespace=namespace,
                        tier=Tier.EPISODIC,
                        session_id=f"{sample['sample_id']}:{key.removeprefix('session_')}",
                        created_at=when + _dt.timedelta(seconds=position),
                        metadata={"dia_id": turn["dia_id"], "speaker": turn["speaker"]},
                    )
                )
        for item in sample["qa"]:
            if item.get("category") == 5 or not item.get("evidence"):
                continue
            evidence = {e.replace(" ", "") for e in item["evidence"]} & turn_ids
            if not evidence:
                data.skipped += 1
                continue
            ids = frozenset(f"{sample['sample_id']}/{e}" for e in evidence)
            data.questions.append(Question(namespace, item["question"], item["category"], ids))
    return data


def score(ranked: Iterable[tuple[Question, Sequence[str]]]) -> dict[str, dict[str, float]]:
    """Recall@k and hit@k per category and ``overall`` from each question's ranked ids.

    Args:
        ranked: ``(question, ids best first)`` pairs; at least ``max(KS)`` ids
            each when the engine found that many.

    Returns:
        ``{group: {"questions": n, "recall@5": ..., "recall@10": ..., "hit@5": ...,
        "hit@10": ...}}`` with groups ``overall`` and each category name present.
    """
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for question, ids in ranked:
        for group in ("overall", CATEGORIES[question.category]):
            row = sums[group]
            row["questions"] += 1
            for k in KS:
                row[f"recall@{k}"] += recall_at_k(ids, question.evidence, k)
                row[f"hit@{k}"] += hit_at_k(ids, question.evidence, k)
    return {
        group: {
            name: (value if name == "questions" else value / row["questions"])
            for name, value in row.items()
        }
        for group, row in sums.items()
    }


def evaluate(
    store: Store, questions: Iterable[Question], mode: str, **recall_options: Any
) -> dict[str, dict[str, float]]:
    """Ask ``store`` every question in one recall mode and score the answers.

    Args:
        store: A store holding the dataset's drafts.
        questions: The questions to ask.
        mode: ``"text"``, ``"vector"`` or ``"hybrid"``.
        **recall_options: Passed to :meth:`embedmind.Store.recall`.

    Returns:
        :func:`score`'s result.
    """
    return score(
        (q, store.recall(q.text, k=max(KS), namespace=q.namespace, mode=mode, **recall_options).ids)
        for q in questions
    )


def table(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """Render results as plain text: one row per method and category.

    Args:
        results: ``{method: score(...)}``.

    Returns:
        The table.
    """
    columns = [f"{m}@{k}" for m in ("recall", "hit") for k in KS]
    width = max([8, *(len(method) for method in results)])
    lines = [
        f"{'method':<{width}} {'category':<12} {'n':>5} " + " ".join(f"{c:>9}" for c in columns)
    ]
    for method, groups in results.items():
        for group in ("overall", *CATEGORIES.values()):
            if group in groups:
                row = groups[group]
                cells = " ".join(f"{row[c]:>9.3f}" for c in columns)
                lines.append(f"{method:<{width}} {group:<12} {int(row['questions']):>5} {cells}")
    return "\n".join(lines)


DATA_ENV = "EMBEDMIND_LOCOMO"
_RELATIVE = Path("shared/data/locomo/locomo-dev.json")


def data_path(explicit: str | Path | None = None) -> Path:
    """Return where the LoCoMo file is: given, ``$EMBEDMIND_LOCOMO``, or beside the repo.

    Without an explicit path or the variable, the first existing of
    ``../shared/data/locomo/locomo-dev.json`` next to the repository this
    package was installed from, then the same path above the current
    directory and each of its parents.

    Args:
        explicit: A path given on the command line.

    Returns:
        The path to read; it may not exist (the caller reports that).
    """
    if explicit:
        return Path(explicit)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    repo = Path(__file__).resolve().parents[2]
    here = Path.cwd().resolve()
    candidates = [repo.parent / _RELATIVE, *(p / _RELATIVE for p in [here, *here.parents])]
    return next((c for c in candidates if c.exists()), candidates[0])
