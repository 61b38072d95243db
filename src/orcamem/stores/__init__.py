"""Stores: engines behind the one ``Store`` protocol (``base``); SQLite is the default."""
