"""How results present themselves in a report: the section registry each result kind registers its section in
(:mod:`.sections`) and the report's figures (:mod:`.figures`)."""
