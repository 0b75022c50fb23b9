"""The second line: Backstop's own implementation of the methodology.

A deliberate second implementation of the Spark methodology that exists only to check
the first (the rules underwriter, :mod:`credit.underwriting`). It restates the policy
text (shared/spec/reference-policy.md) apart from the underwriter and, where that
helps independence, by another method:

- the "Capacity" arithmetic is exact (``fractions.Fraction``) with one final half-up
  rounding to the policy's quanta, where the underwriter carries 34-digit Decimals
  (:mod:`credit.secondline.exact`);
- the counteroffer is solved in closed form by inverting the caps, then certified by
  the forward formulas, where the underwriter gallops and bisects
  (:mod:`credit.secondline.offer`);
- the decision steps are conditions on facts established once, tried in the policy's
  ``steps`` order (:mod:`credit.secondline.derive`).

It reads every number through :class:`~credit.policy.Policy` and every code and
wording through :class:`~credit.catalogue.Catalogue`. An import contract
(.importlinter, ``secondline-independent``) proves it imports nothing from the
underwriter, the other underwriters, the batch engine, the tools, the pipeline, the
notices or the evals: a check that re-uses the code it checks checks nothing.

The public surface::

    derive(application, report, policy, *, case_id, as_of, catalogue=None) -> Derivation
    compare(decision, reasons, derived) -> list[Difference]
"""

from credit.secondline.compare import Difference, compare
from credit.secondline.derive import Derivation, DerivedFigures, Reason, derive
from credit.secondline.offer import Offer

__all__ = ["Derivation", "DerivedFigures", "Difference", "Offer", "Reason", "compare", "derive"]
