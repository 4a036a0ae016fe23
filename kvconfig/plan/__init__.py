"""From a deployment to its plan: backends, groups, votes, findings."""
