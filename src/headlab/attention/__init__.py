"""Attention as headlab sees it: capturing each layer's attention (:mod:`.hooks`), the capture routes that score
heads without a ``(T, T)`` matrix (:mod:`.routes`), changing a head's output (:mod:`.interventions`) and padded
batches (:mod:`.padding`)."""
