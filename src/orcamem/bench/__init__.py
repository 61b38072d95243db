"""Benchmarks and the load tester; the CLI imports these lazily."""
