"""Reading facts out of an installed vLLM (never imported by ``kvconfig lint``)."""
