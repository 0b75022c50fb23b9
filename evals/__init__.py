"""Evaluation suites that live beside the package: the notice mutation suite
(:mod:`evals.mutations`, run by ``credit mutate``)."""
