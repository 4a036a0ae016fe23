"""Reading what operators write: vllm serve configs, pasted commands, native files, platforms."""
