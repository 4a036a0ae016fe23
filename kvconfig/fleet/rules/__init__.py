"""Findings between the engines of a fleet (KV7xx), and inside one engine's components.

Each rule names the engines, the group, both values, what vLLM does at that point
(its error, or ``silent:`` and the consequence) and settings that make them agree. Fixes
that name a block size or a backend are checked: the engines are planned again with it
(``Replan``) and the rule must pass.

``common`` holds the finding and engine pairs; ``engine`` the rules inside one engine;
``nixl``, ``mooncake`` and ``pairs`` those between a producer and a consumer; ``routers``
and ``tiers`` those between a router or a shared offload tier and its engines.
"""
