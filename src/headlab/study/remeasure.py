"""A claims table measured again from the parts committed beside it, without its models: each model's
``scan.json``, ``characterize.json`` and ``ablate.json`` in ``FOLDER/MODEL/`` and its monitor evaluation where the
table read one. A rule whose statistic changed needs its rows computed again from the measurements; the models of a
table (self-trained ones among them) need not be kept for that. The rows go through :func:`measure`, the one path
``headlab claims`` takes, and the table is judged under the identity of its data (a re-measurement of declared data
is exploratory)."""

from __future__ import annotations

from pathlib import Path

from headlab.ablation.result import AblateResult
from headlab.census.result import ScanResult
from headlab.errors import HeadlabError
from headlab.notices import say
from headlab.rulebook.registration import judged_as_produced
from headlab.study.characterize import CharacterizeResult
from headlab.study.claim_rows import claim_heads, cross_model, measure
from headlab.study.claims import ClaimsResult, _evaluation, corrected, folder_names, said_left_out
from headlab.study.claims_parts import ablation_heads


def remeasure(folder: str | Path) -> ClaimsResult:
    """The claims table in ``folder`` measured again from its committed parts (its settings kept). A model whose
    scan or characterization is not there is refused, naming the file; the monitor folder the table names is
    read from the working directory, as the table wrote it; a model without an evaluation there keeps claim 9 not
    measured, as :func:`headlab.study.claims.reread_monitor` leaves it."""
    folder = Path(folder)
    old = ClaimsResult.read(folder)
    monitor = old.settings.get("monitor_dir")
    found = []
    for m, name in zip(old.models, folder_names([m.model for m in old.models])):
        part = folder / name
        for kind in (ScanResult, CharacterizeResult):
            if not (part / kind.KIND).exists():
                raise HeadlabError(f"remeasure: {part / kind.KIND} is not there; the table cannot be measured "
                                   "again without it (run headlab claims again)")
        sc, ch = ScanResult.read(part), CharacterizeResult.read(part)
        ablation = AblateResult.read(part) if (part / AblateResult.KIND).exists() else None
        left_out = ablation_heads(claim_heads(sc, ch), ch.slash_mass["value"], sc.n_heads)[1] if ablation else None
        evaluation = None
        if monitor:
            try:
                evaluation = _evaluation(monitor, m.model)
            except HeadlabError:  # as reread_monitor: a model without an evaluation keeps claim 9 not measured
                say(f"claim 9 of {m.model}: no evaluation in {monitor}; left not measured")
        found.append(said_left_out(measure(sc, ch, m.kind, old.settings["kappa"], ablation, evaluation), left_out))
    return judged_as_produced(ClaimsResult(*corrected(found, cross_model(found)), old.settings))
