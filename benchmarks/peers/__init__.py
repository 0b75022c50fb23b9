"""Peer engines the benchmarks compare ``credit`` with (GoRules zen-engine)."""
