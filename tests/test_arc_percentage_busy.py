"""ARC's `suggestReplicasByPercentageRunnersBusy` (controllers/actions.summerwind.net/
autoscaling.go at 2ee6b3b8; actions/actions-runner-controller, Apache-2.0): ARC has no test of
it. Rows computed by hand from ARC's code: `fractionBusy := float64(busy) / float64(before)`;
`>= scaleUpThreshold`: `before + adj` or `int(math.Ceil(float64(before) * factor))`;
`< scaleDownThreshold`: `before - adj` or `int(float64(before) * factor)`; else `*st.replicas`.
`before` is the target's replicas, 1 when unset. No reservations (ARC #1962 is a documented
deviation)."""

from __future__ import annotations

import pytest

from hooks.autoscaler.metrics import BusyRule, suggest_by_busy_runners

DEFAULT = BusyRule()


@pytest.mark.parametrize(
    ("rule", "replicas", "busy", "want"),
    [
        (DEFAULT, 10, 8, 13),  # 0.8 >= 0.8: ceil(13.0)
        (DEFAULT, 10, 7, 10),  # between the thresholds
        (DEFAULT, 10, 3, 10),  # 0.3 is not < 0.3
        (DEFAULT, 10, 2, 7),  # int(7.000000000000001)
        (DEFAULT, 3, 0, 2),  # int(2.0999999999999996)
        (DEFAULT, 1, 0, 0),  # int(0.7)
        (DEFAULT, None, 1, 2),  # before = 1: ceil(1.3)
        (DEFAULT, 7, 7, 10),  # ceil(9.1)
        (DEFAULT, 0, 0, 0),  # NaN: no threshold matches, *st.replicas
        (BusyRule(scale_up_adjustment=2), 10, 9, 12),
        (BusyRule(scale_down_adjustment=3), 10, 0, 7),
        (BusyRule(scale_down_adjustment=3), 2, 0, -1),  # ARC does not clamp here (min does)
        (BusyRule(scale_up_threshold=0.5, scale_up_factor=2.0), 4, 2, 8),
        (BusyRule(scale_down_threshold=0.5, scale_down_factor=0.5), 5, 2, 2),  # int(2.5)
    ],
)
def test_suggest_replicas_by_percentage_runners_busy(
    rule: BusyRule, replicas: int | None, busy: int, want: int
) -> None:
    assert suggest_by_busy_runners(rule, replicas, busy) == want
