"""LoCoMo retrieval through the public API, exactly as the data's README says.

Documents: one memory per dialog turn, id = its ``dia_id``, content =
``"<speaker>: <text>"`` plus the image caption when the turn has one,
``created_at`` = the session's date; each conversation in its own namespace.
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
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedmind.model import Draft, Tier
from embedmind.store import Store

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
    """Read ``locomo-dev.json`` into drafts and questions."""
    data = Dataset()
    for sample in json.loads(path.read_text()):
        namespace = f"locomo/{sample['sample_id']}"
        turn_ids = set()
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
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
                        session_id=key,
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


def evaluate(
    store: Store, questions: Iterable[Question], mode: str, **recall_options: Any
) -> dict[str, dict[str, float]]:
    """Recall@k and hit@k per category (and ``overall``) for one recall mode."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for question in questions:
        ids = store.recall(
            question.text, k=max(KS), namespace=question.namespace, mode=mode, **recall_options
        ).ids
        for group in ("overall", CATEGORIES[question.category]):
            row = sums[group]
            row["questions"] += 1
            for k in KS:
                found = len(question.evidence & set(ids[:k]))
                row[f"recall@{k}"] += found / len(question.evidence)
                row[f"hit@{k}"] += 1.0 if found else 0.0
    return {
        group: {
            name: (value if name == "questions" else value / row["questions"])
            for name, value in row.items()
        }
        for group, row in sums.items()
    }


def table(results: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """A plain-text table: one row per mode and category."""
    columns = [f"{m}@{k}" for m in ("recall", "hit") for k in KS]
    lines = [f"{'mode':<8} {'category':<12} {'n':>5} " + " ".join(f"{c:>9}" for c in columns)]
    for mode, groups in results.items():
        for group in ("overall", *CATEGORIES.values()):
            if group in groups:
                row = groups[group]
                cells = " ".join(f"{row[c]:>9.3f}" for c in columns)
                lines.append(f"{mode:<8} {group:<12} {int(row['questions']):>5} {cells}")
    return "\n".join(lines)
