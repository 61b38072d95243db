"""Foundation: data model, config, errors, clock, text and embedders. Imports nothing above it."""
