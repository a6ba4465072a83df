# mk/bisect.mk - the upstream commit that introduced a defect (repro/bisect/).
#
#   make bisect DEFECT=B3                      over the history bundle in ../shared/upstream/
#   make bisect DEFECT=B3 FPCHIST=~/fpcsource  over your own FPCSource clone (cloned
#                                              --shared into build/bisect/, never touched)
#   make bisect DEFECT=all                     B1..B8 in turn
#   make bisect DEFECT=B8.next                 one symptom of a defect that has several
#                                              (kit.SYMPTOMS; DEFECT=B8 bisects each)
# The answer and its log go to results/bisect/bisect.json (RESULTS=... to
# change; RESULTS=repro/bisect/results.json refreshes the committed one).
# Builds are cached per tree in build/bisect/builds/.

FPCHIST ?=
RESULTS ?= results/bisect/bisect.json
BISECT_DEFECTS = $(if $(filter all,$(DEFECT)),B1 B2 B3 B4 B5 B6 B7 B8,$(DEFECT))

.PHONY: bisect
bisect: fpc-trunk build/probe
	@[ -n "$(DEFECT)" ] || { echo "usage: make bisect DEFECT=B1..B8|B8.next (a symptom, kit.SYMPTOMS)|all [FPCHIST=/path/to/fpcsource]" >&2; exit 2; }
	@mkdir -p $(dir $(RESULTS))
	@for d in $(BISECT_DEFECTS); do \
	    FPCHIST=$(FPCHIST) python3 repro/bisect/introduced.py $$d --results $(RESULTS) || exit 1; \
	done
