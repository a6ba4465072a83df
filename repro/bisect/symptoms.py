"""symptoms.py - the introducing commit of each symptom of a defect, from
repro/bisect/results.json (`make bisect DEFECT=Bn`).

    sys.path.insert(0, "repro/bisect"); import symptoms
    for s in symptoms.entries("B8"):
        s["symptom"], s["symptom_text"], s["statement"], s["first_bad"]["upstream"],
        [p["state"] for p in s["verification"]["parents"]]

A defect with one symptom gives its one entry (symptom "", symptom_text
""); one with several (defects.SYMPTOMS) its entry "symptoms"[name] for each,
in defects.SYMPTOMS order (introduced.py stores them so).  Every entry has the
fields introduced.py's README lists: kind, statement, first_bad, parents,
verification (named and each parent's verdict), bisect (with
skipped_reasons: each skip reason whole, with its count)."""
from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results.json"


def entries(defect: str, path: Path = RESULTS) -> list[dict]:
    try:
        e = json.loads(path.read_text()).get(defect)
    except (OSError, ValueError):
        return []
    if not e:
        return []
    syms = e.get("symptoms")
    if not syms:
        return [{"symptom": "", "symptom_text": "", **e}]
    return list(syms.values())
