"""Whether a ratio measured over a few A-B-B-A pairs differs from 1 by more than the noise between pairs.

Each pair (one run through Temporal, one direct, in alternating order) gives one ratio; their mean with a 95 %
confidence interval from Student's t distribution (the textbook interval for the mean of a small sample,
https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm, whose table the quantiles below are from)
says whether the durability tax is a figure or "within noise" (the interval contains 1, or there is only one
pair). No test asserts the figure: the issue measured 0.86 one day and above 1 the next.
"""

from __future__ import annotations

import statistics

from pydantic import BaseModel

T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
"""Two-sided 95 % quantiles of Student's t by degrees of freedom (NIST table); above 10, 2.228 (conservative)."""


class RatioInterval(BaseModel):
    """The mean of per-pair ratios and its 95 % confidence interval (None with fewer than two pairs)."""

    pairs: int
    mean: float
    low: float | None = None
    high: float | None = None

    @property
    def within_noise(self) -> bool:
        return self.low is None or self.high is None or self.low <= 1.0 <= self.high

    def describe(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.mean:.2f} from {self.pairs} pair: within noise (no interval from one pair)"
        verdict = "within noise" if self.within_noise else "above noise" if self.low > 1 else "below noise"
        return f"{self.mean:.2f}, 95% CI {self.low:.2f} to {self.high:.2f} over {self.pairs} pairs: {verdict}"


def ratio_interval(ratios: list[float]) -> RatioInterval:
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        return RatioInterval(pairs=len(ratios), mean=mean)
    half = T_975[min(len(ratios) - 1, max(T_975))] * statistics.stdev(ratios) / len(ratios) ** 0.5
    return RatioInterval(pairs=len(ratios), mean=mean, low=mean - half, high=mean + half)
