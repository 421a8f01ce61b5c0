"""The one error of the autoscaling decision: the HRA cannot be sized as configured."""

from __future__ import annotations


class AutoscalingError(ValueError):
    """An invalid HRA (or scale target) for autoscaling. The message is ARC's where ARC has one."""
