"""The cross-model study on the census: characterizing heads on constructed stimuli (:mod:`.characterize`), the
RoPE slash pattern (:mod:`.rope`), the claims table (:mod:`.claims`), comparison, scale and languages."""
