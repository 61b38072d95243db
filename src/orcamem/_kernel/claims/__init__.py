"""Claims, the rule-based extractor and the checks every claim passes, shared by three systems.

Consolidation (``engine.consolidate``), local memory's no-model capture and the capability's
no-model after-turn save all turn lines said by a person into claims with ``rules``, check them
with ``verify.verify_claims`` (citations, speaker, grounding, secrets, dates in code) and show a
claim with ``claims.memory_content``. It lives here, below the four systems, because they may
not import each other.
"""
