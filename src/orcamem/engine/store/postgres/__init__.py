"""The PostgreSQL + pgvector engine store (``pip install 'orcamem[pg]'``): ``store.py`` the
store, ``schema.py`` its migrations, ``lexical.py`` BM25 over ``tsvector``, ``vectors.py`` exact
scores in the line cache, ``graph.py`` the entity graph's rows, ``rows.py`` keys and notes."""

from .store import PostgresStore, safe_url

__all__ = ["PostgresStore", "safe_url"]
