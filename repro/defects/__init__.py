"""repro/defects - the registry: each defect's measure, found by name.

One module per defect (bNN_<topic>.py, its topic from DESIGN section 3's
table) holds its verdict, its figures and its symptoms: MEASURES (its
columns: the defect's name, and one "Bn.<symptom>" per symptom bisected
apart), and where they apply SYMPTOMS (those symptoms, the first being what
the matrix column judges), HEAVY (it loads the machine: run one at a time)
and WINE_NA (why a run under Wine cannot show it).  What the measures share
(servers, rows, verdicts, the probe, retried) is repro/harness/kit.py.

REGISTRY below is the one place the matrix (its Horse rows included), make
bisect, checkfix.py, proxies.py and the clients find a measure or its
constants: every table here is derived from the modules it names.
Adding a defect: its own module, and a line in REGISTRY.
"""
from __future__ import annotations

import importlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from kit import KitError, Row, Verdict, patchset, retried  # noqa: E402

# A line per defect: its column, its module (repro/defects/<module>.py).
REGISTRY = {
    "B1": "b01_allow_connect",
    "B2": "b02_pipelining",
    "B3": "b03_nodelay",
    "B4": "b04_unannounced_close",
    "B5": "b05_body_drains_buffer",
    "B6": "b06_pool_recheck",
    "B7": "b07_pool_hang",
    "B8": "b08_fd_setsize",
    "B9": "b09_set_idle",
    "B10": "b10_expect_continue",
    "B11": "b11_framing",
    "B12": "b12_body_size",
    "B13": "b13_connection_options",
    "B14": "b14_head_content",
    "B15": "b15_destroy_wait",
    "B16": "b16_rejected_silently",
    "B17": "b17_head_read_time",
    "B18": "b18_empty_line",
    "B19": "b19_busy_503",
    "B20": "b20_absolute_form",
    "B21": "b21_polled_tick",
}

MODULES = {d: importlib.import_module(f"{__name__}.{m}") for d, m in REGISTRY.items()}
# A defect a patch names (its Defect: header, patchset.py) with no line here
# would be no column: said at once.
if set(patchset.defects()) - set(REGISTRY):
    raise KitError("defects with a patch and no measure (a line in REGISTRY, repro/defects/"
                   f"__init__.py): {sorted(set(patchset.defects()) - set(REGISTRY))}")
# The matrix's columns, in the defects' order.  A defect is a column whether
# or not the series has its fix yet (without it every row reproduces it).
DEFECTS = sorted(MODULES, key=lambda d: int(d[1:]))
# Every measure, by column (a defect's own and its symptoms').
MEASURES = {col: fn for d in DEFECTS for col, fn in MODULES[d].MEASURES.items()}
# Defects with more than one symptom, each with its own history: name, the
# measure (a MEASURES key), what it is.  A defect not here has one symptom,
# its own column.
SYMPTOMS = {d: m.SYMPTOMS for d, m in MODULES.items() if hasattr(m, "SYMPTOMS")}
# Those that load the machine (1,100 threads, a CPU-bound load): the matrix
# runs them one at a time.
HEAVY = {d for d, m in MODULES.items() if getattr(m, "HEAVY", False)}
# What a run under Wine cannot show (a figure would be Wine's, not Windows').
WINE_NA = {d: m.WINE_NA for d, m in MODULES.items() if hasattr(m, "WINE_NA")}
# B3 on the wire (tcpdump): its columns (column -> over veth) and measure.
CAPTURES = MODULES["B3"].CAPTURES
can_capture = MODULES["B3"].can_capture
measure_capture = MODULES["B3"].measure_capture


def module(defect: str):
    """The module of defect (or of one of its columns, "B8.next")."""
    return MODULES[defect.split(".")[0]]


def symptoms(defect: str) -> list[tuple[str, str, str]]:
    """(symptom, measure, text) for each of defect's symptoms; one
    ("", defect, "") for a defect with a single symptom."""
    return list(SYMPTOMS.get(defect, (("", defect, ""),)))


def measure(name: str, row: Row, outdir: Path, use_strace: bool) -> Verdict:
    outdir.mkdir(parents=True, exist_ok=True)
    if row.platform == "win64" and name.split(".")[0] in WINE_NA:
        return Verdict("n/a", WINE_NA[name.split(".")[0]])
    return retried(lambda d: MEASURES[name](row, d, use_strace), outdir, name)


# A row's measures side by side, as the matrix runs them: under TSan the
# stock row took 136 s one after another, nearly all of it waiting (B15's
# watch, B7's, B9's and B10's deadlines, each x SLOW).  The heavy ones
# (HEAVY) one at a time, beside the others.
ROW_JOBS = int(os.environ.get("KIT_ROW_JOBS", "6"))


def measure_row(row: Row, outdir: Path, use_strace: bool) -> dict[str, Verdict]:
    with ThreadPoolExecutor(1) as heavy, ThreadPoolExecutor(ROW_JOBS) as light:
        futs = {d: (heavy if d in HEAVY else light).submit(measure, d, row, outdir, use_strace)
                for d in DEFECTS}
        return {d: futs[d].result() for d in DEFECTS}
