"""The version, as a constant: ``importlib.metadata`` costs start-up time, and a source tree that is
not installed has no metadata. A test checks it against pyproject.toml."""

__version__ = "0.1.0"

# The project's home (also [project.urls] in pyproject.toml): SARIF's informationUri, and the rule
# documentation its helpUri points into.
PROJECT_URL = "https://github.com/shapeflow/shapeflow"
RULES_DOC_URL = f"{PROJECT_URL}/blob/main/docs/rules.md"
