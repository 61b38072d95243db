"""The shared kernel: what two or more memory systems use. It imports nothing of orcamem but ``orcamem.errors``."""
