"""Test doubles the project's own tests drive the real LLM path with.

- :mod:`credit.testing.standin`: a scripted stand-in for the Anthropic Messages API on
  127.0.0.1, speaking what the Claude Code CLI needs (streamed and whole messages, API
  errors, a hang, a cut stream) and recording every request;
- :mod:`credit.testing.scripted`: the scripted models it is driven by (one that
  underwrites from the tool results, and one for each way a model can misbehave);
- :mod:`credit.testing.isolation`: whether this process's network is loopback only.

Nothing in the product imports this package.
"""
