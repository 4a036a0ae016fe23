"""What vLLM's KV connectors, routers' block reports and offload tiers compute
(``vllm/distributed/kv_transfer/kv_connector/*``), one module per connector or rule family.

Each function mirrors one vLLM function or check (named in its docstring, paths relative
to the ``vllm`` package) on plain values: block sizes, the voters of a kernel block-size
vote, tensor-parallel sizes, a handful of flags. Nothing here imports torch or vLLM; the
fleet planner (``kvconfig.fleet``) feeds it an engine's plan, and the fidelity tests run
vLLM's own functions on the same inputs.

Errors vLLM raises come back as ``kvconfig.errors.ConnectorRefusal`` (the exception vLLM
raises and its text), so callers can report vLLM's own words.

``registry`` (connector names, layouts), ``sync`` (the connectors' own vote),
``topology``, ``nixl``, ``mooncake``, ``offloading``, ``scheduler`` (router block sizes,
hash seeds) and ``stages`` (pipeline stages).
"""
