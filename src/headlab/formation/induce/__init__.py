"""Growing a head on purpose (``headlab induce``): the study's arms (:mod:`.arms`), what each run measured
(:mod:`.measure`), and the study with its verdicts (:mod:`.study`). The auxiliary loss itself is a training
option: :mod:`headlab.training.induce`."""
