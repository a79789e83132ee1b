"""The version, as a constant: ``importlib.metadata`` costs start-up time, and a source tree that is
not installed has no metadata. A test checks it against pyproject.toml."""

__version__ = "0.1.0"
