"""The drivers: what runs a command on files, from one model's analysis to many files' lint.

``analysis`` (load -> index -> inference -> rules, for one model: what ``infer`` and ``lint`` share
and ``optimize`` starts from), ``linter`` (``lint``: settings, suppressions, baselines, cache,
executors, ``--fix``), ``optimizer`` (``optimize``: refuse models with errors, run the engine),
``verify`` (onnxruntime, bit for bit), and what is built from an analysis on request (``annotate``,
``netx``, ``modeldiff``, ``rewritediff``). ``api`` is the Python API the package exports.
"""
