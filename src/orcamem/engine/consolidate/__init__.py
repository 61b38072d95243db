"""Sleep consolidation: episodes in, verified states, events and rules out."""
