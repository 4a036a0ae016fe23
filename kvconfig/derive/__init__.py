"""From a model's config.json to its KV-cache layers, one module per model family."""
