"""Pipelines: ingest (episodes to indexed lines) and recall (query to packed context)."""
