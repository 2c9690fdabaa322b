"""How often headlab's Gopher and C4 rules (headlab.monitor.rules) reach datatrove's keep/drop decision.

datatrove is not a headlab dependency (it needs spaCy); install it beside the venv and point at it:

    pip install --target /tmp/dtt datatrove spacy
    python bench/rules_parity.py --datatrove /tmp/dtt [--documents 400]

Prints, per filter and corpus, the documents, the share datatrove drops, the share headlab drops and the share
of documents on which the two agree.
"""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datatrove", required=True, help="folder datatrove and spaCy were installed into")
    ap.add_argument("--documents", type=int, default=400, help="documents per corpus")
    ap.add_argument("--corpora", nargs="+", default=["wiki", "pydoc", "man", "python-doc", "linux-doc"])
    a = ap.parse_args()
    sys.path.append(a.datatrove)  # appended: the venv's numpy and friends stay first
    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, GopherQualityFilter, GopherRepetitionFilter

    from headlab.corpus import documents
    from headlab.monitor import rules

    quality, repetition, c4 = GopherQualityFilter(), GopherRepetitionFilter(), C4QualityFilter()
    theirs = {"gopher": lambda d: quality.filter(d) is True and repetition.filter(d) is True,
              "c4": lambda d: c4.filter(d) is True}
    ours = {"gopher": lambda t: not rules.gopher(t), "c4": lambda t: not rules.c4(t)[0]}
    print("| filter | corpus | documents | datatrove drops | headlab drops | same decision |")
    print("|---|---|---|---|---|---|")
    for corpus in a.corpora:
        texts = ["\n".join(d.load()) for d in documents([corpus])[:a.documents]]
        for name in theirs:
            keep_t = [theirs[name](Document(text=t, id=str(i))) for i, t in enumerate(texts)]
            keep_o = [ours[name](t) for t in texts]
            n = len(texts)
            same = sum(x == y for x, y in zip(keep_t, keep_o)) / n
            print(f"| {name} | {corpus} | {n} | {1 - sum(keep_t) / n:.3f} | {1 - sum(keep_o) / n:.3f} | {same:.3f} |")


if __name__ == "__main__":
    main()
