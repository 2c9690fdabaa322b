"""The head census: the engine that scores every head of a model over samples (:mod:`.engine`), the statistics
that merge by addition (:mod:`.stats`, :mod:`.accumulator`), the checkpointed, sharded stream
(:mod:`.stream`), per-sample rows (:mod:`.per_sample`) and the ``headlab scan`` command (:mod:`.scanner`)."""
