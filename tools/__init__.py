"""Developer tools: not part of the kvconfig package or its wheel."""
