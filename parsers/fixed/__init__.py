"""The fixed-width parser (properties.md §4): a header record, then the data record of one table.

Two plan builders (``plan``: copybook and sourcedefs mode) make one picklable ``FixedPlan``; one
runtime (``runtime.FixedParser``) runs it, decoding whole records with functions generated once
per table layout (``records``).
"""

from parsers.fixed.plan import FixedPlan, build_plan
from parsers.fixed.runtime import FixedParser

__all__ = ["FixedParser", "FixedPlan", "build_plan"]
