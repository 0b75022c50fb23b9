"""Governance: the fair-lending guard, the Keystone gate and its reviews, typed refusal."""
