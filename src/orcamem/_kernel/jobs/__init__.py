"""Durable background jobs with leases and fencing tokens, over any row backend."""
