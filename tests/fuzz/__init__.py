"""The exit-code contract fuzzer (docs/errors.md): ``contract`` has the formats, the
mutations and the checks; ``python -m tests.fuzz`` is the slow mode."""
