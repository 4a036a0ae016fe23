"""Hypothesis profiles for the property and fuzz tests.

``ci`` (the default) runs a few hundred examples per property, derandomized so CI
is repeatable. ``long`` is the documented deep run (docs/errors.md):

    KVCONFIG_HYPOTHESIS=long pytest -q -p no:cacheprovider tests/property

runs every property on at least 100,000 examples with a fresh random seed.
``KVCONFIG_HYPOTHESIS_EXAMPLES=N`` sets another count on top of any profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci", max_examples=300, deadline=None, derandomize=True, suppress_health_check=_SLOW_OK
)
settings.register_profile(
    "long", max_examples=100_000, deadline=None, suppress_health_check=_SLOW_OK
)
settings.register_profile("dev", max_examples=50, deadline=None, suppress_health_check=_SLOW_OK)
settings.load_profile(os.environ.get("KVCONFIG_HYPOTHESIS", "ci"))
if os.environ.get("KVCONFIG_HYPOTHESIS_EXAMPLES"):
    settings.register_profile(
        "custom",
        settings.get_profile(os.environ.get("KVCONFIG_HYPOTHESIS", "ci")),
        max_examples=int(os.environ["KVCONFIG_HYPOTHESIS_EXAMPLES"]),
    )
    settings.load_profile("custom")
