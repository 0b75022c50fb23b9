"""Underwriters and the Spark runtime that governs their turns.

The rules underwriter and the LLM underwriter (``credit.underwriters.claude``, the
``llm`` extra) drive the same four governed tools and are refused alike.
"""

from credit.underwriters.rules import RulesUnderwriter
from credit.underwriters.runtime import (
    SAFETY_REFUSAL,
    SPARK_METHODOLOGY,
    TURN_FAILED,
    UNDERWRITER_TURN,
    SparkRuntime,
    TurnContext,
    TurnResult,
    Underwriter,
)

__all__ = [
    "SAFETY_REFUSAL",
    "SPARK_METHODOLOGY",
    "TURN_FAILED",
    "UNDERWRITER_TURN",
    "RulesUnderwriter",
    "SparkRuntime",
    "TurnContext",
    "TurnResult",
    "Underwriter",
]
