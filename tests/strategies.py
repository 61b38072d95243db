"""Hypothesis strategies shared by the bad-input tests."""

from __future__ import annotations

from hypothesis import strategies as st

ISO_LIKE = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}{}".format,
    st.integers(0, 10000),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.integers(0, 60),
    st.integers(0, 60),
    st.sampled_from(["Z", "", "z", "+00:00", "+14:00", "-23:59", "+24:00", ".5Z", " ", "x"]),
)
"""Strings shaped like ISO-8601 times, in and just out of every field's range."""
